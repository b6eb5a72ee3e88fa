connected
model: Linux                                   
serial: dc18789c3ebd0d3ea6e4
subsysnqn: ddpscope-nqn
transport: rdma
state: live
size: 32768 sectors
1+0 records in
1+0 records out
8192 bytes (8.2 kB, 8.0 KiB) copied, 0.0177468 s, 462 kB/s
write: ok
1+0 records in
1+0 records out
16384 bytes (16 kB, 16 KiB) copied, 0.00982196 s, 1.7 MB/s
read: ok
read back: same as written
