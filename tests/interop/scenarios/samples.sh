# SPDX-License-Identifier: GPL-2.0-or-later
# The real siw sample captures in samples/siw/ (see samples/siw/README.md): siw on eth0 with lo
# MTU 1500, both ends in the guest, one tcpdump capture on lo per sample.
lab_up 1500 || exit 1
sample siw-rping-64        rping_pair 64 2
sample siw-rping-4000      rping_pair 4000 2
sample siw-rping-20000     rping_pair 20000 2
sample siw-send-bw         perf_pair ib_send_bw 4096 5
sample siw-write-bw        perf_pair ib_write_bw 8192 5
sample siw-read-bw         perf_pair ib_read_bw 8192 5
siw_param mpa_crc_required Y
sample siw-rping-crc       rping_pair 4000 2
sample siw-write-bw-crc    perf_pair ib_write_bw 8192 5
siw_param mpa_crc_required N
siw_param peer_to_peer Y
sample siw-rping-p2p       rping_pair 4000 1
siw_param peer_to_peer N
siw_param mpa_version 1
sample siw-send-bw-mpa1    perf_pair ib_send_bw 4096 5
siw_param mpa_version 2
. /out/lab/nvmeof.sh
nvmeof_up || exit 1
sample siw-nvmeof          nvmeof_io
sample siw-terminate-bad-rkey bad_rkey_pair
. /out/lab/storage.sh
nvmeof_inline_up || exit 1
sample siw-nvmeof-inline   nvmeof_inline_io
nfs_up || exit 1
sample siw-nfs-rdma        nfs_io
lab_note "sample failures: $SAMPLE_FAILURES"
[ "$SAMPLE_FAILURES" = 0 ]
