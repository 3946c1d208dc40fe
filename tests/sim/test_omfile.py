"""Real programs load .om paths: sidecar descriptions, the config mapping, real headers."""

from __future__ import annotations

import json
import os
import shutil
import struct

from aclmon import acl_constants as C
from aclmon.sim import config as sim_config
from aclmon.sim import omfile


def fake_om(path, name: str = "resnet50", platform: str = "Ascend310P3") -> bytes:
    header = bytearray(omfile.OM_HEADER_SIZE)
    struct.pack_into("<III", header, 0, omfile.OM_MAGIC, omfile.OM_HEADER_SIZE, 0x10000000)
    struct.pack_into("<I", header, 76, 16)
    header[84 : 84 + len(name)] = name.encode()
    struct.pack_into("<I", header, 156, 1)
    header[160 : 160 + len(platform)] = platform.encode()
    raw = bytes(header) + bytes(16)
    path.write_bytes(raw)
    return raw


def test_header_is_read():
    raw = bytearray(300)
    assert omfile.read_header(bytes(raw)) is None
    struct.pack_into("<I", raw, 0, omfile.OM_MAGIC)
    raw[84:88] = b"yolo"
    raw[160:165] = b"910B2"
    header = omfile.read_header(bytes(raw))
    assert header is not None and header.name == "yolo" and header.platform_version == "910B2"


def test_sidecar_description_is_used(acl, model_path, tmp_path):
    om = tmp_path / "resnet50.om"
    fake_om(om)
    shutil.copy(model_path["resnet_tiny"], tmp_path / "resnet50.om.json")
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    model_id, ret = acl.mdl.load_from_file(os.fspath(om))
    assert ret == 0
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, model_id) == 0
    assert acl.mdl.get_input_name_by_index(desc, 0) == "image"
    _, _, ret = acl.mdl.query_size(os.fspath(om))
    assert ret == 0


def test_config_mapping_by_path_and_by_header_name(acl, model_path, tmp_path, monkeypatch):
    om = tmp_path / "classifier.om"
    raw = fake_om(om, name="classifier")
    config = tmp_path / "sim.json"
    config.write_text(json.dumps({"models": {"classifier": model_path["mlp_head"]}}))
    monkeypatch.setenv(sim_config.CONFIG_ENV, os.fspath(config))
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    assert acl.mdl.load_from_file(os.fspath(om))[1] == 0  # the header's name maps it
    model_id, ret = acl.mdl.load_from_mem(acl.util.bytes_to_ptr(raw), len(raw))
    assert ret == 0 and model_id > 0


def test_a_real_om_without_description_names_both_paths(acl, tmp_path):
    om = tmp_path / "detector.om"
    fake_om(om, name="detector")
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    assert acl.mdl.load_from_file(os.fspath(om)) == (0, C.ACL_ERROR_INVALID_FILE)
    message = acl.get_recent_err_msg()
    assert f"{om} is an offline model (name 'detector', platform Ascend310P3)" in message
    assert f"write {om}.json" in message and "ACLMON_SIM_CONFIG" in message
    missing = tmp_path / "nothing.om"
    assert acl.mdl.load_from_file(os.fspath(missing))[1] == C.ACL_ERROR_INVALID_FILE
    assert f"{missing} does not exist" in acl.get_recent_err_msg()
