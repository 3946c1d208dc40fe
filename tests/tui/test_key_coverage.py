"""Every binding of every app and screen has a Pilot test that presses each of
its keys and checks what it did: the table below names it. A new binding
without a test, or a test renamed away, fails here (the mouse actions are
checked the same way in test_key_table.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from keytable import binding_sections
from tui_helpers import golden_app

from aclmon.tui.keys import KEY_SYMBOLS

TESTS = Path(__file__).resolve().parents[1]

#: binding id -> the tests that press its keys (together, every one of them)
KEY_TESTS: dict[str, tuple[str, ...]] = {
    "view.devices": ("test_number_keys_switch_views_and_show_their_content",),
    "view.exceptions": ("test_number_keys_switch_views_and_show_their_content",),
    "view.profiling": ("test_number_keys_switch_views_and_show_their_content",),
    "view.dumps": ("test_number_keys_switch_views_and_show_their_content",),
    "view.logs": ("test_logs_view_filters_searches_follows_and_links_back_to_the_exception",),
    "view.npus": ("test_enter_on_this_jobs_process_shows_its_devices_and_without_a_loop_says_attach",),
    "host.terminate": ("test_T_asks_first_and_y_terminates_the_process",),
    "host.kill": ("test_K_with_n_or_escape_sends_nothing_and_y_kills",),
    "host.confirm": ("test_T_asks_first_and_y_terminates_the_process",),
    "host.cancel": ("test_K_with_n_or_escape_sends_nothing_and_y_kills",),
    "top.help": ("test_top_help_lists_its_keys_and_q_or_ctrl_c_quit",),
    "top.quit": ("test_top_help_lists_its_keys_and_q_or_ctrl_c_quit",),
    "top.interrupt": ("test_top_help_lists_its_keys_and_q_or_ctrl_c_quit",),
    "jobs.back": ("test_escape_in_a_jobs_screens_goes_back_after_clearing_a_filter",),
    "view.compare": ("test_d_jumps_to_the_first_divergent_operator",),
    "app.help": ("test_help_screen_lists_every_binding_with_its_id",),
    "app.theme": ("test_ctrl_t_switches_between_the_dark_and_light_pair",),
    "app.quit": ("test_quit_key_exits",),
    "app.interrupt": ("test_ctrl_c_quits",),
    "list.up": ("test_exception_list_cursor_keys_and_detail",),
    "list.down": ("test_exception_list_cursor_keys_and_detail",),
    "list.page_up": ("test_exception_list_cursor_keys_and_detail",),
    "list.page_down": ("test_exception_list_cursor_keys_and_detail",),
    "list.first": ("test_exception_list_cursor_keys_and_detail",),
    "list.last": ("test_exception_list_cursor_keys_and_detail",),
    "list.open": ("test_click_selects_a_row_and_q_closes_the_detail",),
    "filter.open": ("test_filter_then_n_and_N_go_through_the_matches_and_esc_clears",),
    "filter.clear": ("test_filter_then_n_and_N_go_through_the_matches_and_esc_clears",),
    "filter.next": ("test_filter_then_n_and_N_go_through_the_matches_and_esc_clears",),
    "filter.previous": ("test_filter_then_n_and_N_go_through_the_matches_and_esc_clears",),
    "filter.mode": ("test_tab_in_the_filter_line_searches_instead_and_n_jumps_between_matches",),
    "sort.next": ("test_s_cycles_the_sort_and_r_reverses_it_in_exceptions_dumps_and_logs",),
    "sort.reverse": ("test_s_cycles_the_sort_and_r_reverses_it_in_exceptions_dumps_and_logs",),
    "devices.down": ("test_devices_view_cursor_keys_move_a_line_and_the_scroll_follows",),
    "devices.up": (
        "test_devices_view_cursor_keys_move_a_line_and_the_scroll_follows",
        "test_help_closes_on_q_question_mark_and_f1_and_the_devices_arrows_scroll",
    ),
    "devices.page_down": ("test_devices_view_pages_and_goes_to_the_ends_like_every_list",),
    "devices.page_up": ("test_devices_view_pages_and_goes_to_the_ends_like_every_list",),
    "devices.first": ("test_devices_view_pages_and_goes_to_the_ends_like_every_list",),
    "devices.last": ("test_devices_view_pages_and_goes_to_the_ends_like_every_list",),
    "devices.destroyed": ("test_devices_tree_hides_destroyed_streams_and_filters_by_text",),
    "exceptions.follow": ("test_follow_mode_and_new_count_when_scrolled_away",),
    "exceptions.group": ("test_c_groups_identical_exceptions_with_a_count_and_enter_opens_the_newest",),
    "exceptions.logs": (
        "test_an_exception_shows_the_log_lines_of_its_process_within_a_second",
        "test_l_lists_the_lines_near_the_exception_in_the_order_they_were_logged",
    ),
    "profiling.down": ("test_stray_keys_in_the_profiling_view_send_nothing",),
    "profiling.up": (
        "test_stray_keys_in_the_profiling_view_send_nothing",
        "test_arrows_and_h_l_move_the_cursor_through_the_columns_and_send_nothing",
    ),
    "profiling.right": ("test_arrows_and_h_l_move_the_cursor_through_the_columns_and_send_nothing",),
    "profiling.left": ("test_arrows_and_h_l_move_the_cursor_through_the_columns_and_send_nothing",),
    "profiling.check": ("test_each_flag_is_checked_by_space_or_a_click_and_sent_by_enter",),
    "profiling.apply": ("test_enter_applies_exactly_the_pending_set",),
    "profiling.discard": ("test_stray_keys_in_the_profiling_view_send_nothing",),
    "profiling.metric": ("test_enter_applies_exactly_the_pending_set",),
    "profiling.devices": ("test_enter_applies_exactly_the_pending_set",),
    "profiling.start_stop": ("test_start_stop_live_timings_and_choices_that_survive_a_stop",),
    "profiling.live": ("test_start_stop_live_timings_and_choices_that_survive_a_stop",),
    "profiling.sort": ("test_s_cycles_the_sort_column_and_r_reverses_without_sending_anything",),
    "profiling.reverse": ("test_s_cycles_the_sort_column_and_r_reverses_without_sending_anything",),
    "dumps.to_operator": ("test_t_jumps_from_an_overflow_to_its_operator_and_b_comes_back",),
    "dumps.first_overflow": ("test_F_goes_to_the_first_overflow_of_the_step",),
    "dumps.overflow_only": ("test_t_jumps_from_an_overflow_to_its_operator_and_b_comes_back",),
    "dumps.back": (
        "test_t_jumps_from_an_overflow_to_its_operator_and_b_comes_back",
        "test_F_goes_to_the_first_overflow_of_the_step",
    ),
    "dumps.per_step": ("test_overflows_show_device_model_and_step_and_c_keeps_the_first_of_each_step",),
    "dumps.pane": ("test_tab_goes_into_the_dumps_pane_and_back_and_f_says_it_toggles",),
    "dumps.export": ("test_e_exports_the_tensors_as_convert_names_them_even_read_only",),
    "dumps.copy_path": ("test_y_and_Y_copy_the_path_and_the_operator_name",),
    "dumps.copy_op": ("test_y_and_Y_copy_the_path_and_the_operator_name",),
    "logs.follow": ("test_logs_view_filters_searches_follows_and_links_back_to_the_exception",),
    "logs.level": ("test_logs_view_filters_searches_follows_and_links_back_to_the_exception",),
    "logs.module": ("test_logs_view_filters_searches_follows_and_links_back_to_the_exception",),
    "logs.source": ("test_o_cycles_the_sources_of_the_lines_shown",),
    "timeline.zoom_in": ("test_w_s_plus_minus_and_the_wheel_zoom_keeping_the_time_under_the_cursor",),
    "timeline.zoom_out": ("test_w_s_plus_minus_and_the_wheel_zoom_keeping_the_time_under_the_cursor",),
    "timeline.left": ("test_a_d_and_the_arrows_pan_and_f_follows_the_newest_again",),
    "timeline.right": ("test_a_d_and_the_arrows_pan_and_f_follows_the_newest_again",),
    "timeline.up": ("test_a_d_and_the_arrows_pan_and_f_follows_the_newest_again",),
    "timeline.down": ("test_a_d_and_the_arrows_pan_and_f_follows_the_newest_again",),
    "timeline.page_up": ("test_a_d_and_the_arrows_pan_and_f_follows_the_newest_again",),
    "timeline.page_down": ("test_a_d_and_the_arrows_pan_and_f_follows_the_newest_again",),
    "timeline.follow": ("test_a_d_and_the_arrows_pan_and_f_follows_the_newest_again",),
    "timeline.whole": ("test_a_d_and_the_arrows_pan_and_f_follows_the_newest_again",),
    "timeline.open": ("test_enter_on_an_operator_shows_its_op_model_run_and_duration",),
    "view.timeline": ("test_w_s_plus_minus_and_the_wheel_zoom_keeping_the_time_under_the_cursor",),
    "detail.timeline": ("test_an_exceptions_detail_jumps_to_its_moment_and_back_to_the_exception",),
    "slice.exception": ("test_an_exceptions_detail_jumps_to_its_moment_and_back_to_the_exception",),
    "compare.divergent": ("test_d_jumps_to_the_first_divergent_operator",),
    "compare.failing_only": ("test_filter_sort_and_failing_only_as_every_list",),
    "compare.follow": ("test_live_rows_arrive_as_dump_files_land_and_f_follows_them",),
    "detail.close": (
        "test_click_selects_a_row_and_q_closes_the_detail",
        "test_exception_list_cursor_keys_and_detail",
        "test_the_detail_without_files_closes_on_enter_and_scrolls_with_space",
    ),
    "detail.related": ("test_logs_view_filters_searches_follows_and_links_back_to_the_exception",),
    "detail.logs": ("test_an_exception_shows_the_log_lines_of_its_process_within_a_second",),
    "help.close": (
        "test_help_screen_lists_every_binding_with_its_id",
        "test_help_closes_on_q_question_mark_and_f1_and_the_devices_arrows_scroll",
    ),
    "modal.down": ("test_help_screen_scroll_keys",),
    "modal.up": (
        "test_help_screen_scroll_keys",
        "test_the_detail_without_files_closes_on_enter_and_scrolls_with_space",
    ),
    "modal.page_down": (
        "test_help_screen_scroll_keys",
        "test_the_detail_without_files_closes_on_enter_and_scrolls_with_space",
    ),
    "modal.page_up": ("test_help_screen_scroll_keys",),
    "replay.play": ("test_play_folds_by_recording_time_at_the_chosen_speed",),
    "replay.step": ("test_step_back_and_forth_and_speed_keys",),
    "replay.back": ("test_step_back_and_forth_and_speed_keys",),
    "replay.faster": (
        "test_step_back_and_forth_and_speed_keys",
        "test_equals_greater_less_t_and_escape_in_the_time_prompt",
    ),
    "replay.slower": ("test_step_back_and_forth_and_speed_keys",),
    "replay.next_marker": (
        "test_next_and_previous_exception_or_overflow",
        "test_equals_greater_less_t_and_escape_in_the_time_prompt",
    ),
    "replay.prev": (
        "test_next_and_previous_exception_or_overflow",
        "test_equals_greater_less_t_and_escape_in_the_time_prompt",
    ),
    "replay.forward": ("test_end_start_and_ten_second_jumps",),
    "replay.backward": ("test_end_start_and_ten_second_jumps",),
    "replay.goto": (
        "test_go_to_time_prompt",
        "test_equals_greater_less_t_and_escape_in_the_time_prompt",
    ),
    "replay.start": ("test_end_start_and_ten_second_jumps",),
    "replay.end": ("test_end_start_and_ten_second_jumps",),
    "replay.seek_cancel": ("test_equals_greater_less_t_and_escape_in_the_time_prompt",),
    "fleet.anomaly": ("test_the_alert_line_names_the_first_anomaly_and_a_opens_its_rank",),
    "fleet.sort": ("test_fleet_keys_s_sorts_slash_filters_escape_clears_and_q_or_ctrl_c_quit",),
    "fleet.filter": ("test_fleet_keys_s_sorts_slash_filters_escape_clears_and_q_or_ctrl_c_quit",),
    "fleet.clear": ("test_fleet_keys_s_sorts_slash_filters_escape_clears_and_q_or_ctrl_c_quit",),
    "fleet.quit": ("test_fleet_keys_s_sorts_slash_filters_escape_clears_and_q_or_ctrl_c_quit",),
    "fleet.interrupt": ("test_fleet_keys_s_sorts_slash_filters_escape_clears_and_q_or_ctrl_c_quit",),
    "fleet.help": ("test_question_mark_shows_the_fleet_keys_and_the_palette_is_aclmons",),
    "fleet.back": ("test_escape_in_one_ranks_screens_clears_a_filter_first_then_goes_back_to_the_fleet",),
    "picker.cancel": (
        "test_target_picker_returns_the_chosen_agent",
        "test_q_in_the_agent_picker_cancels",
    ),
}  # fmt: skip


def strings_of_tests() -> dict[str, set[str]]:
    """Each test function of the suite -> the string constants in it (the keys it presses)."""
    out: dict[str, set[str]] = {}
    for path in TESTS.rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                out[node.name] = {
                    c.value
                    for c in ast.walk(node)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                }
    return out


def test_every_key_of_every_binding_is_pressed_by_a_named_test(tmp_path):
    bindings: dict[str, set[str]] = {}
    for _title, rows in binding_sections(golden_app(tmp_path)):
        for keys, _description, binding_id in rows:
            if binding_id:
                bindings.setdefault(binding_id, set()).update(keys.split(","))
    assert set(KEY_TESTS) == set(bindings), "bindings without a test, or tests of none"
    tests = strings_of_tests()
    typed = {name: char for char, name in KEY_SYMBOLS.items()}
    unpressed = []
    for binding_id, keys in sorted(bindings.items()):
        missing = [t for t in KEY_TESTS[binding_id] if t not in tests]
        assert not missing, f"{binding_id}: no test named {missing}"
        pressed = set().union(*(tests[t] for t in KEY_TESTS[binding_id]))
        for key in sorted(keys):
            if key not in pressed and KEY_SYMBOLS.get(key, typed.get(key)) not in pressed:
                unpressed.append(f"{binding_id}: {key}")
    assert not unpressed, "keys no named test presses: " + ", ".join(unpressed)
