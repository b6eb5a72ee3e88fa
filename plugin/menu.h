// SPDX-License-Identifier: GPL-2.0-or-later
// Wireshark's Tools › ddpscope menu (epan/plugin_if.h ext_menubar): "Open this capture in
// ddpscope-gui at the selected frame" runs `ddpscope-gui FILE --frame N`.
#pragma once

namespace ddpscope::plugin {

// Registers the menu (GUI only; tshark ignores it). `proto` owns the entry.
void register_menu(int proto);

}  // namespace ddpscope::plugin
