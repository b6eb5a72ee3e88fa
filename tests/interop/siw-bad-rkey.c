// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * siw-bad-rkey: an rping client that lies about its rkey.
 *
 * It connects to `rping -s` over rdma_cm and sends rping's 16-octet buffer advertisement
 * (buf, rkey, size, all big-endian) naming a real registered buffer but a wrong STag. The
 * rping server then issues an RDMA Read Request against that STag; our siw (the Read
 * responder) cannot find the source STag and answers with a Terminate (RDMAP, Remote
 * Protection, Invalid STag). Used by the siw lab (tests/interop/scenarios/samples.sh) to
 * record a real Terminate.
 *
 * usage: siw-bad-rkey ADDR [PORT]
 */
#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

struct rping_adv {  // rping's struct rping_rdma_info, network byte order
  uint64_t buf;
  uint32_t rkey;
  uint32_t size;
};

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s ADDR [PORT]\n", argv[0]);
    return 2;
  }
  struct rdma_addrinfo hints, *res;
  memset(&hints, 0, sizeof hints);
  hints.ai_port_space = RDMA_PS_TCP;
  if (rdma_getaddrinfo(argv[1], argc > 2 ? argv[2] : "7174", &hints, &res)) {
    perror("rdma_getaddrinfo");
    return 1;
  }
  struct ibv_qp_init_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  attr.sq_sig_all = 1;
  struct rdma_cm_id* id;
  if (rdma_create_ep(&id, res, NULL, &attr)) {
    perror("rdma_create_ep");
    return 1;
  }
  static char data[4000];
  static struct rping_adv adv;
  static char rbuf[64];
  memset(data, 'x', sizeof data);
  struct ibv_mr* dmr =
      ibv_reg_mr(id->pd, data, sizeof data,
                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
  struct ibv_mr* amr = rdma_reg_msgs(id, &adv, sizeof adv);
  struct ibv_mr* rmr = rdma_reg_msgs(id, rbuf, sizeof rbuf);
  if (!dmr || !amr || !rmr) {
    perror("register");
    return 1;
  }
  if (rdma_post_recv(id, NULL, rbuf, sizeof rbuf, rmr)) {
    perror("rdma_post_recv");
    return 1;
  }
  struct rdma_conn_param cp;
  memset(&cp, 0, sizeof cp);
  cp.responder_resources = 1;
  cp.initiator_depth = 1;
  cp.retry_count = 7;
  if (rdma_connect(id, &cp)) {
    perror("rdma_connect");
    return 1;
  }
  uint32_t bad = dmr->rkey ^ 0x00ffff00u;  // another STag index, same key byte
  printf("real rkey 0x%08x, advertised 0x%08x, buf %p\n", dmr->rkey, bad, (void*)data);
  adv.buf = htobe64((uint64_t)(uintptr_t)data);
  adv.rkey = htobe32(bad);
  adv.size = htobe32(sizeof data);
  if (rdma_post_send(id, NULL, &adv, sizeof adv, amr, 0)) {
    perror("rdma_post_send");
    return 1;
  }
  struct ibv_wc wc;
  int n = rdma_get_send_comp(id, &wc);
  printf("send completion: n=%d status=%s\n", n, n > 0 ? ibv_wc_status_str(wc.status) : "-");
  // The peer's Read Request draws our Terminate; give it time, then leave.
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += 5;
  for (;;) {
    n = ibv_poll_cq(id->recv_cq, 1, &wc);
    if (n > 0) {
      printf("recv completion: status=%s\n", ibv_wc_status_str(wc.status));
      break;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec > until.tv_sec) {
      printf("no receive completion within 5 s\n");
      break;
    }
    usleep(50000);
  }
  rdma_disconnect(id);
  rdma_dereg_mr(rmr);
  rdma_dereg_mr(amr);
  rdma_dereg_mr(dmr);
  rdma_destroy_ep(id);
  rdma_freeaddrinfo(res);
  return 0;
}
