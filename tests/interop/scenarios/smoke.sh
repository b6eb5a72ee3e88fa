# SPDX-License-Identifier: GPL-2.0-or-later
# Smallest end-to-end check of the lab: siw up, one rping exchange captured.
lab_up 1500
cap_start smoke-rping
rping_pair 64 1
cap_stop
