connected
model: Linux                                   
serial: dc18789c3ebd0d3ea6e4
subsysnqn: ddpscope-nqn
transport: rdma
state: live
size: 32768 sectors
1+0 records in
1+0 records out
8192 bytes (8.2 kB, 8.0 KiB) copied, 0.0242991 s, 337 kB/s
write: ok
dd: error reading '/dev/nvme0n1': Input/output error
0+0 records in
0+0 records out
0 bytes copied, 0.0740114 s, 0.0 kB/s
cmp: EOF on /tmp/r2.bin which is empty
