// SPDX-License-Identifier: GPL-2.0-or-later
#include "menu.h"

#include <epan/plugin_if.h>
#include <glib.h>
#include <wsutil/report_message.h>

#include <string>
#include <vector>

namespace ddpscope::plugin {
namespace {

constexpr const char* kGui = "ddpscope-gui";

// The capture Wireshark shows and its selected frame, through plugin_if (the GUI fills
// ws_info_t; a capture still being written has no file to give yet).
void open_in_gui(ext_menubar_gui_type, gpointer, gpointer) {
  ws_info_t* info = nullptr;
  plugin_if_get_ws_info(&info);
  if (info == nullptr || info->cf_filename == nullptr || info->cf_filename[0] == '\0' ||
      info->cf_state == FILE_CLOSED) {
    report_failure("ddpscope: open or save a capture file first.");
    return;
  }
  gchar* gui = g_find_program_in_path(kGui);
  if (gui == nullptr) {
    report_failure(
        "ddpscope: %s is not installed (not in PATH); the ddpscope-gui package "
        "provides it.",
        kGui);
    return;
  }
  const std::string frame = std::to_string(info->cf_framenr);
  std::string file(info->cf_filename);
  std::vector<gchar*> argv{gui, file.data()};
  std::string frame_flag = "--frame";
  if (info->cf_framenr > 0) {
    argv.push_back(frame_flag.data());
    argv.push_back(const_cast<gchar*>(frame.c_str()));
  }
  argv.push_back(nullptr);
  GError* err = nullptr;
  if (!g_spawn_async(nullptr, argv.data(), nullptr, G_SPAWN_DEFAULT, nullptr, nullptr, nullptr,
                     &err)) {
    report_failure("ddpscope: cannot start %s: %s", gui, err ? err->message : "unknown error");
    if (err) g_error_free(err);
  }
  g_free(gui);
}

}  // namespace

void register_menu(int proto) {
  ext_menu_t* menu = ext_menubar_register_menu(proto, "ddpscope", TRUE);
  ext_menubar_set_parentmenu(menu, "Tools");
  ext_menubar_add_entry(menu, "Open this capture in ddpscope-gui at the selected frame",
                        "Runs ddpscope-gui FILE --frame N: the streams, region map, MSN chart, "
                        "findings and bytes at this frame",
                        open_in_gui, nullptr);
}

}  // namespace ddpscope::plugin
