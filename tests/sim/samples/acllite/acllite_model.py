"""AclLiteModel: load an offline model, feed numpy inputs, return numpy outputs.

Written after the acllite model class: the copy direction follows the run mode,
input arrays are copied once into reusable device buffers, the dynamic-batch
input (``ascend_mbatch_shape_data``) is looked up on every execution, and the
outputs are shaped from ``get_output_dims`` (or ``get_cur_output_dims`` after a
dynamic gear was chosen).
"""

import acl
import acllite_utils as utils
import constants as const
import numpy as np
from acllite_logger import log_error, log_info, log_warning

DYNAMIC_INPUT = "ascend_mbatch_shape_data"
NUMPY_TYPES = {
    const.ACL_FLOAT: np.float32,
    const.ACL_FLOAT16: np.float16,
    const.ACL_INT8: np.int8,
    const.ACL_INT32: np.int32,
    const.ACL_UINT8: np.uint8,
    const.ACL_INT64: np.int64,
}


class AclLiteModel:
    def __init__(self, model_path, load_type=0):
        self._run_mode, ret = acl.rt.get_run_mode()
        utils.check_ret("acl.rt.get_run_mode", ret)
        self._copy_policy = const.ACL_MEMCPY_DEVICE_TO_DEVICE
        if self._run_mode == const.ACL_HOST:
            self._copy_policy = const.ACL_MEMCPY_DEVICE_TO_HOST
        self._model_path = model_path
        if load_type == 0:
            self._model_id, ret = acl.mdl.load_from_file(model_path)
            utils.check_ret("acl.mdl.load_from_file", ret)
        else:
            with open(model_path, "rb") as handle:
                self._om_bytes = handle.read()
            ptr = acl.util.bytes_to_ptr(self._om_bytes)
            self._model_id, ret = acl.mdl.load_from_mem(ptr, len(self._om_bytes))
            utils.check_ret("acl.mdl.load_from_mem", ret)
        self._model_desc = acl.mdl.create_desc()
        utils.check_ret("acl.mdl.get_desc", acl.mdl.get_desc(self._model_desc, self._model_id))
        self._input_num = acl.mdl.get_num_inputs(self._model_desc)
        self._output_num = acl.mdl.get_num_outputs(self._model_desc)
        self._input_buffer = [{"addr": None, "size": 0} for _ in range(self._input_num)]
        self._output_dataset = self._gen_output_dataset()
        self._input_dataset = None
        self._gear_set = False
        log_info(
            "model %s loaded, %d inputs, %d outputs", model_path, self._input_num, self._output_num
        )

    def _gen_output_dataset(self):
        dataset = acl.mdl.create_dataset()
        for i in range(self._output_num):
            size = acl.mdl.get_output_size_by_index(self._model_desc, i)
            buf, ret = acl.rt.malloc(size, const.ACL_MEM_MALLOC_NORMAL_ONLY)
            utils.check_ret("acl.rt.malloc", ret)
            _, ret = acl.mdl.add_dataset_buffer(dataset, acl.create_data_buffer(buf, size))
            utils.check_ret("acl.mdl.add_dataset_buffer", ret)
        return dataset

    def _gen_input_dataset(self, input_list):
        input_list = list(input_list)
        index, ret = acl.mdl.get_input_index_by_name(self._model_desc, DYNAMIC_INPUT)
        if ret == const.ACL_SUCCESS:
            size = acl.mdl.get_input_size_by_index(self._model_desc, index)
            buf, ret = acl.rt.malloc(size, const.ACL_MEM_MALLOC_NORMAL_ONLY)
            utils.check_ret("acl.rt.malloc", ret)
            input_list.append({"data": buf, "size": size})
        if len(input_list) != self._input_num:
            log_error("%d inputs given, the model takes %d", len(input_list), self._input_num)
            return const.FAILED
        self._input_dataset = acl.mdl.create_dataset()
        for i, item in enumerate(input_list):
            if isinstance(item, dict):
                data, size = item["data"], item["size"]
            else:
                data, size = self._copy_input(np.ascontiguousarray(item), i)
            model_size = acl.mdl.get_input_size_by_index(self._model_desc, i)
            if size != model_size:
                log_warning("input %d is %d bytes, the model says %d", i, size, model_size)
            _, ret = acl.mdl.add_dataset_buffer(
                self._input_dataset, acl.create_data_buffer(data, size)
            )
            utils.check_ret("acl.mdl.add_dataset_buffer", ret)
        return const.SUCCESS

    def _copy_input(self, array, index):
        self._host_input = array.tobytes()  # kept alive while the pointer is used
        ptr = acl.util.bytes_to_ptr(self._host_input)
        size = array.nbytes
        item = self._input_buffer[index]
        if item["addr"] is not None and item["size"] != size:  # another batch size
            acl.rt.free(item["addr"])
            item["addr"] = None
        if item["addr"] is None:
            if self._run_mode == const.ACL_HOST:
                item["addr"] = utils.copy_data_host_to_device(ptr, size)
            else:
                item["addr"] = utils.copy_data_device_to_device(ptr, size)
            item["size"] = size
        else:
            kind = (
                const.ACL_MEMCPY_HOST_TO_DEVICE
                if self._run_mode == const.ACL_HOST
                else const.ACL_MEMCPY_DEVICE_TO_DEVICE
            )
            utils.check_ret("acl.rt.memcpy", acl.rt.memcpy(item["addr"], size, ptr, size, kind))
        if item["addr"] is None:
            raise Exception(f"copying input {index} to the device failed")
        return item["addr"], size

    def _release_input_dataset(self):
        for i in range(acl.mdl.get_dataset_num_buffers(self._input_dataset)):
            acl.destroy_data_buffer(acl.mdl.get_dataset_buffer(self._input_dataset, i))
        acl.mdl.destroy_dataset(self._input_dataset)
        self._input_dataset = None

    def set_dynamic_batch(self, batch):
        index, ret = acl.mdl.get_input_index_by_name(self._model_desc, DYNAMIC_INPUT)
        utils.check_ret("acl.mdl.get_input_index_by_name", ret)
        gears, ret = acl.mdl.get_dynamic_batch(self._model_desc)
        utils.check_ret("acl.mdl.get_dynamic_batch", ret)
        ret = acl.mdl.set_dynamic_batch_size(self._model_id, self._input_dataset, index, batch)
        if batch not in gears["batch"]:
            assert ret == const.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID, ret
            return const.FAILED
        utils.check_ret("acl.mdl.set_dynamic_batch_size", ret)
        self._gear_set = True
        return const.SUCCESS

    def set_dynamic_hw(self, height, width):
        index, ret = acl.mdl.get_input_index_by_name(self._model_desc, DYNAMIC_INPUT)
        utils.check_ret("acl.mdl.get_input_index_by_name", ret)
        gears, ret = acl.mdl.get_dynamic_hw(self._model_desc, -1)
        utils.check_ret("acl.mdl.get_dynamic_hw", ret)
        assert [height, width] in [list(hw) for hw in gears["hw"]], gears
        ret = acl.mdl.set_dynamic_hw_size(self._model_id, self._input_dataset, index, height, width)
        utils.check_ret("acl.mdl.set_dynamic_hw_size", ret)
        self._gear_set = True
        return const.SUCCESS

    def execute(self, input_list, batch=None, hw=None):
        if self._gen_input_dataset(input_list) != const.SUCCESS:
            return None
        if batch is not None and self.set_dynamic_batch(batch) != const.SUCCESS:
            self._release_input_dataset()
            return None
        if hw is not None:
            self.set_dynamic_hw(*hw)
        ret = acl.mdl.execute(self._model_id, self._input_dataset, self._output_dataset)
        self._release_input_dataset()
        if ret != const.ACL_SUCCESS:
            log_error("acl.mdl.execute failed, ret=%d", ret)
            return None
        return self._outputs_to_numpy()

    def _outputs_to_numpy(self):
        outputs = []
        for i in range(self._output_num):
            if self._gear_set:
                dims, ret = acl.mdl.get_cur_output_dims(self._model_desc, i)
            else:
                dims, ret = acl.mdl.get_output_dims(self._model_desc, i)
            utils.check_ret("output dims", ret)
            np_type = NUMPY_TYPES[acl.mdl.get_output_data_type(self._model_desc, i)]
            result = np.zeros(tuple(dims["dims"]), dtype=np_type)
            buf = acl.mdl.get_dataset_buffer(self._output_dataset, i)
            ret = acl.rt.memcpy(
                acl.util.numpy_to_ptr(result),
                result.nbytes,
                acl.get_data_buffer_addr(buf),
                result.nbytes,
                self._copy_policy,
            )
            utils.check_ret("acl.rt.memcpy", ret)
            outputs.append(result)
        return outputs

    def release(self):
        for i in range(self._output_num):
            buf = acl.mdl.get_dataset_buffer(self._output_dataset, i)
            acl.rt.free(acl.get_data_buffer_addr(buf))
            acl.destroy_data_buffer(buf)
        acl.mdl.destroy_dataset(self._output_dataset)
        for item in self._input_buffer:
            if item["addr"] is not None:
                acl.rt.free(item["addr"])
        acl.mdl.unload(self._model_id)
        acl.mdl.destroy_desc(self._model_desc)
