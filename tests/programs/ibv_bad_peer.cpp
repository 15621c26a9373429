// A librdmacm client that misbehaves towards a ptibv endpoint in one chosen way, for the transport suite's bad-peer
// tests over ibv: the receiver must refuse or close this connection alone, count it, and serve everyone else.
//
//   ibv_bad_peer --host H --port P --case KIND [--target TID]
//
// Cases (ptibv's wire protocol: pt/ptibv/src/wire.hpp):
//   refused at connection time: garbage-private-data, no-private-data, wrong-version, zero-credit-buffers
//   udp-garbage         random datagrams to H's RoCE v2 port (4791)
//   connect-and-vanish  a proper connection, then everything destroyed without a word
//   after a proper connection, one bad frame: bad-magic, oversized, unknown-target (the receiver must disconnect),
//                       truncated (a frame announced larger than what is sent before disconnecting)
//   good                a proper connection and one well-formed 64-byte frame for --target
// rdma_cm manages the QP (rdma_create_qp). Every wait is bounded.
// Exit codes: 0 the receiver did what it should, 1 it did not (or usage), 2 a call failed or a wait timed out.
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../support/frame_bytes.hpp"
#include "daqx/api/frame.hpp"
#include "daqx/pt/credit_flow.hpp"
#include "wire.hpp"

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kCreditBuffers = 8;
constexpr std::size_t kCreditBufferSize = 64;  // credit messages are 16 bytes: room to spare
constexpr int kResolveMillis = 2000;
constexpr auto kEventLimit = std::chrono::seconds(5);
constexpr auto kCompletionLimit = std::chrono::seconds(5);
constexpr std::uint16_t kRoceV2Port = 4791;

struct Options {
  std::string host = "127.0.0.1";
  std::string port;
  std::string kind;
  daqx::Tid target = 1;  // an application the receiver has (for the cases that are not about the target)
};

int usage(const char* why) {
  std::fprintf(stderr, "ibv_bad_peer: %s\nusage: ibv_bad_peer --host H --port P --case KIND [--target TID]\n"
                       "  KIND: garbage-private-data no-private-data wrong-version zero-credit-buffers udp-garbage\n"
                       "        connect-and-vanish bad-magic oversized unknown-target truncated good\n", why);
  return 1;
}

int fail(const std::string& what) {
  std::fprintf(stderr, "ibv_bad_peer: %s\n", what.c_str());
  return 2;
}

std::string errno_text() { return std::strerror(errno); }

void step(const std::string& text) {
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);
}

bool is_refused_case(const std::string& kind) {
  return kind == "garbage-private-data" || kind == "no-private-data" || kind == "wrong-version" ||
         kind == "zero-credit-buffers";
}
bool is_frame_case(const std::string& kind) {
  return kind == "bad-magic" || kind == "oversized" || kind == "unknown-target" || kind == "truncated" ||
         kind == "good";
}

// What stays open, released in reverse order of opening.
struct Connection {
  rdma_event_channel* channel = nullptr;
  rdma_cm_id* id = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* send_cq = nullptr;
  ibv_cq* recv_cq = nullptr;
  bool has_qp = false;
  ibv_mr* credit_region = nullptr;
  ibv_mr* send_region = nullptr;
  void release() {
    if (has_qp) rdma_destroy_qp(id);
    has_qp = false;
    if (send_region != nullptr) ibv_dereg_mr(send_region);
    send_region = nullptr;
    if (credit_region != nullptr) ibv_dereg_mr(credit_region);
    credit_region = nullptr;
    if (send_cq != nullptr) ibv_destroy_cq(send_cq);
    send_cq = nullptr;
    if (recv_cq != nullptr) ibv_destroy_cq(recv_cq);
    recv_cq = nullptr;
    if (pd != nullptr) ibv_dealloc_pd(pd);
    pd = nullptr;
    if (id != nullptr) rdma_destroy_id(id);
    id = nullptr;
    if (channel != nullptr) rdma_destroy_event_channel(channel);
    channel = nullptr;
  }
  ~Connection() { release(); }
};

// The next CM event, copied (private data included) and acknowledged; false on timeout or error.
struct Event {
  rdma_cm_event_type type = RDMA_CM_EVENT_ADDR_ERROR;
  int status = 0;
  std::vector<std::byte> private_data;
};

bool next_event(rdma_event_channel* channel, std::chrono::milliseconds limit, Event& out, std::string& error) {
  const auto deadline = Clock::now() + limit;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      error = "no rdma_cm event within " + std::to_string(limit.count()) + " ms";
      return false;
    }
    pollfd p{channel->fd, POLLIN, 0};
    int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) {
      error = "poll: " + errno_text();
      return false;
    }
    if (ready <= 0) continue;
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(channel, &event) != 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      error = "rdma_get_cm_event: " + errno_text();
      return false;
    }
    out.type = event->event;
    out.status = event->status;
    out.private_data.clear();
    if (event->param.conn.private_data != nullptr && event->param.conn.private_data_len > 0) {
      const auto* data = static_cast<const std::byte*>(event->param.conn.private_data);
      out.private_data.assign(data, data + event->param.conn.private_data_len);
    }
    rdma_ack_cm_event(event);
    return true;
  }
}

// Waits for one event of the given type; any other is an error.
bool expect_event(rdma_event_channel* channel, rdma_cm_event_type type, Event& out, std::string& error) {
  if (!next_event(channel, kEventLimit, out, error)) {
    error += " (waiting for " + std::string(rdma_event_str(type)) + ")";
    return false;
  }
  if (out.type != type) {
    error = std::string("expected ") + rdma_event_str(type) + ", got " + rdma_event_str(out.type) + " (status " +
            std::to_string(out.status) + ")";
    return false;
  }
  return true;
}

std::array<std::byte, daqx::kFrameHeaderSize> header(std::uint32_t total, daqx::Tid target) {
  return daqx::test::frame_header_bytes(total, target, 4243);
}

// The one message of a frame case, at most buffer_size bytes.
std::vector<std::byte> message_for(const Options& options, std::uint32_t buffer_size) {
  auto message = [](const std::array<std::byte, daqx::kFrameHeaderSize>& head, std::size_t size) {
    std::vector<std::byte> bytes(head.begin(), head.end());
    bytes.resize(size, std::byte{0x5a});
    return bytes;
  };
  if (options.kind == "bad-magic") {
    std::vector<std::byte> garbage(64);
    const char text[] = "this is not a daqx frame, and its first two bytes are no magic..";
    std::memcpy(garbage.data(), text, garbage.size());
    return garbage;
  }
  if (options.kind == "oversized") return message(header(0xfffffff0u, options.target), 64);
  if (options.kind == "unknown-target") return message(header(64, 4242), 64);
  if (options.kind == "truncated") return message(header(2 * buffer_size + 100, options.target), buffer_size);
  return message(header(64, options.target), 64);  // good
}

int udp_garbage(const Options& options) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  int code = getaddrinfo(options.host.c_str(), std::to_string(kRoceV2Port).c_str(), &hints, &found);
  if (code != 0) return fail("getaddrinfo " + options.host + ": " + gai_strerror(code));
  int fd = socket(found->ai_family, SOCK_DGRAM, 0);
  if (fd < 0) {
    freeaddrinfo(found);
    return fail("socket: " + errno_text());
  }
  std::mt19937 random(std::random_device{}());
  std::vector<unsigned char> datagram(1400);
  int sent = 0;
  for (int i = 0; i < 100; ++i) {
    std::size_t size = 1 + random() % datagram.size();
    for (std::size_t b = 0; b < size; ++b) datagram[b] = static_cast<unsigned char>(random());
    if (sendto(fd, datagram.data(), size, 0, found->ai_addr, found->ai_addrlen) >= 0) ++sent;
  }
  close(fd);
  freeaddrinfo(found);
  step("sent " + std::to_string(sent) + " of 100 random UDP datagrams to " + options.host + ":" +
       std::to_string(kRoceV2Port));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (argc % 2 == 0) return usage("every option takes a value");
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string name = argv[i], value = argv[i + 1];
    if (name == "--host") options.host = value;
    else if (name == "--port") options.port = value;
    else if (name == "--case") options.kind = value;
    else if (name == "--target") options.target = static_cast<daqx::Tid>(std::stoul(value));
    else return usage(("unknown option " + name).c_str());
  }
  const bool refused_case = is_refused_case(options.kind);
  const bool frame_case = is_frame_case(options.kind);
  if (options.kind == "udp-garbage") return udp_garbage(options);
  if (!refused_case && !frame_case && options.kind != "connect-and-vanish") return usage("unknown --case");
  if (options.port.empty()) return usage("--port is required");

  // Buffers outlive the verbs objects (declared first, released last).
  std::vector<std::byte> credit_memory(kCreditBuffers * kCreditBufferSize);
  std::vector<std::byte> send_memory;
  Connection c;
  std::string error;
  Event event;

  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int code = getaddrinfo(options.host.c_str(), options.port.c_str(), &hints, &found);
  if (code != 0) return fail("getaddrinfo " + options.host + ":" + options.port + ": " + gai_strerror(code));
  sockaddr_storage destination{};
  std::memcpy(&destination, found->ai_addr, found->ai_addrlen);
  freeaddrinfo(found);

  c.channel = rdma_create_event_channel();
  if (c.channel == nullptr) return fail("rdma_create_event_channel: " + errno_text());
  if (rdma_create_id(c.channel, &c.id, nullptr, RDMA_PS_TCP) != 0) return fail("rdma_create_id: " + errno_text());
  if (rdma_resolve_addr(c.id, nullptr, reinterpret_cast<sockaddr*>(&destination), kResolveMillis) != 0)
    return fail("rdma_resolve_addr: " + errno_text());
  if (!expect_event(c.channel, RDMA_CM_EVENT_ADDR_RESOLVED, event, error)) return fail(error);
  step("address resolved: " + options.host + " through device " + ibv_get_device_name(c.id->verbs->device));
  if (rdma_resolve_route(c.id, kResolveMillis) != 0) return fail("rdma_resolve_route: " + errno_text());
  if (!expect_event(c.channel, RDMA_CM_EVENT_ROUTE_RESOLVED, event, error)) return fail(error);
  step("route resolved");

  c.pd = ibv_alloc_pd(c.id->verbs);
  if (c.pd == nullptr) return fail("ibv_alloc_pd: " + errno_text());
  c.send_cq = ibv_create_cq(c.id->verbs, 16, nullptr, nullptr, 0);
  c.recv_cq = ibv_create_cq(c.id->verbs, 16, nullptr, nullptr, 0);
  if (c.send_cq == nullptr || c.recv_cq == nullptr) return fail("ibv_create_cq: " + errno_text());
  ibv_qp_init_attr attributes{};
  attributes.qp_type = IBV_QPT_RC;
  attributes.sq_sig_all = 1;
  attributes.send_cq = c.send_cq;
  attributes.recv_cq = c.recv_cq;
  attributes.cap.max_send_wr = 8;
  attributes.cap.max_recv_wr = kCreditBuffers;
  attributes.cap.max_send_sge = 1;
  attributes.cap.max_recv_sge = 1;
  if (rdma_create_qp(c.id, c.pd, &attributes) != 0) return fail("rdma_create_qp: " + errno_text());
  c.has_qp = true;
  c.credit_region = ibv_reg_mr(c.pd, credit_memory.data(), credit_memory.size(), IBV_ACCESS_LOCAL_WRITE);
  if (c.credit_region == nullptr) return fail("ibv_reg_mr: " + errno_text());

  // Somewhere for the receiver's credit messages to land before the connection is even up.
  auto post_credit_receive = [&](std::uint32_t index) {
    ibv_sge sge{};
    sge.addr = reinterpret_cast<std::uintptr_t>(credit_memory.data() + index * kCreditBufferSize);
    sge.length = static_cast<std::uint32_t>(kCreditBufferSize);
    sge.lkey = c.credit_region->lkey;
    ibv_recv_wr wr{};
    wr.wr_id = index;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_recv(c.id->qp, &wr, &bad);
  };
  std::uint32_t credit_buffers_posted = 0;
  for (std::uint32_t i = 0; i < kCreditBuffers; ++i) {
    int result = post_credit_receive(i);
    if (result != 0) return fail("ibv_post_recv: " + std::string(std::strerror(result)));
    ++credit_buffers_posted;
  }

  // The connection request: proper, or broken the way the case says.
  std::array<std::byte, 16> request{};
  rdma_conn_param param{};
  param.retry_count = 7;
  param.rnr_retry_count = 0;
  param.private_data = request.data();
  param.private_data_len = static_cast<std::uint8_t>(request.size());
  if (options.kind == "garbage-private-data") {
    std::mt19937 random(std::random_device{}());
    for (auto& b : request) b = static_cast<std::byte>(random());
    request[0] = std::byte{0x47};  // never the request magic by chance
  } else if (options.kind == "no-private-data") {
    param.private_data = nullptr;
    param.private_data_len = 0;
  } else if (options.kind == "wrong-version") {
    daqx::ptibv::encode_request({credit_buffers_posted}, request.data());
    request[4] = std::byte{99};
  } else if (options.kind == "zero-credit-buffers") {
    daqx::ptibv::encode_request({0}, request.data());
  } else {
    daqx::ptibv::encode_request({credit_buffers_posted}, request.data());
  }
  if (rdma_connect(c.id, &param) != 0) return fail("rdma_connect: " + errno_text());
  step("connection request sent (" + options.kind + ", " + std::to_string(param.private_data_len) +
       " bytes of private data)");

  if (!next_event(c.channel, kEventLimit, event, error)) return fail(error + " (waiting for the answer to the request)");
  const bool established = event.type == RDMA_CM_EVENT_ESTABLISHED;
  step(std::string("answer: ") + rdma_event_str(event.type) + " (status " + std::to_string(event.status) + ")");
  if (refused_case) {
    if (established) {
      std::fprintf(stderr, "ibv_bad_peer: the receiver accepted a %s request\n", options.kind.c_str());
      return 1;
    }
    if (event.type == RDMA_CM_EVENT_REJECTED || event.type == RDMA_CM_EVENT_UNREACHABLE ||
        event.type == RDMA_CM_EVENT_CONNECT_ERROR) {
      step("refused, as it should be");
      return 0;
    }
    return fail(std::string("unexpected answer ") + rdma_event_str(event.type));
  }
  if (!established) return fail(std::string("the connection was not accepted: ") + rdma_event_str(event.type));

  daqx::ptibv::ConnectReply reply;
  error = daqx::ptibv::decode_reply(event.private_data.data(), event.private_data.size(), reply);
  if (!error.empty()) return fail("connection reply: " + error);
  step("connected: receiver buffers of " + std::to_string(reply.buffer_size) + " bytes, " +
       std::to_string(reply.posted_total) + " credits");

  if (options.kind == "connect-and-vanish") {
    c.release();
    step("destroyed everything without disconnecting");
    return 0;
  }

  const std::vector<std::byte> message = message_for(options, reply.buffer_size);
  if (message.size() > reply.buffer_size) return fail("the receiver's buffers are smaller than one message");
  send_memory = message;
  c.send_region = ibv_reg_mr(c.pd, send_memory.data(), send_memory.size(), 0);
  if (c.send_region == nullptr) return fail("ibv_reg_mr: " + errno_text());

  // Credits: the reply's, or, if it granted none, those of the first credit message.
  std::uint64_t granted = reply.posted_total;
  const auto credit_deadline = Clock::now() + kCompletionLimit;
  while (granted == 0) {
    if (Clock::now() >= credit_deadline) return fail("no credits within 5 s");
    ibv_wc wc{};
    int got = ibv_poll_cq(c.recv_cq, 1, &wc);
    if (got < 0) return fail("ibv_poll_cq (receive)");
    if (got == 0) {
      usleep(1000);
      continue;
    }
    if (wc.status != IBV_WC_SUCCESS) return fail(std::string("credit receive failed: ") + ibv_wc_status_str(wc.status));
    daqx::pt::CreditMessage credit;
    if (daqx::pt::decode_credit(credit_memory.data() + wc.wr_id * kCreditBufferSize, wc.byte_len, credit) &&
        credit.posted_total > granted)
      granted = credit.posted_total;
    int result = post_credit_receive(static_cast<std::uint32_t>(wc.wr_id));  // re-posted before its credits are used
    if (result != 0) return fail("ibv_post_recv: " + std::string(std::strerror(result)));
    ++credit_buffers_posted;
    step("credit message: " + std::to_string(granted) + " credits in total");
  }

  ibv_sge sge{};
  sge.addr = reinterpret_cast<std::uintptr_t>(send_memory.data());
  sge.length = static_cast<std::uint32_t>(send_memory.size());
  sge.lkey = c.send_region->lkey;
  ibv_send_wr wr{};
  wr.wr_id = 1;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.imm_data = htonl(credit_buffers_posted);
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  int result = ibv_post_send(c.id->qp, &wr, &bad);
  if (result != 0) return fail("ibv_post_send: " + std::string(std::strerror(result)));
  step("sent one message of " + std::to_string(send_memory.size()) + " bytes (" + options.kind + ")");

  const auto deadline = Clock::now() + kCompletionLimit;
  ibv_wc wc{};
  for (;;) {
    int got = ibv_poll_cq(c.send_cq, 1, &wc);
    if (got < 0) return fail("ibv_poll_cq (send)");
    if (got == 1) break;
    if (Clock::now() >= deadline) return fail("no send completion within 5 s");
    usleep(1000);
  }
  step(std::string("send completion: ") + ibv_wc_status_str(wc.status));
  if (wc.status != IBV_WC_SUCCESS) return options.kind == "good" ? 1 : 2;

  if (options.kind == "good") return 0;
  if (options.kind == "truncated") {
    rdma_disconnect(c.id);
    step("disconnected in the middle of the frame");
    if (next_event(c.channel, std::chrono::seconds(2), event, error))
      step(std::string("event: ") + rdma_event_str(event.type));
    return 0;
  }
  // bad-magic, oversized, unknown-target: the receiver must close the connection.
  if (!next_event(c.channel, kEventLimit, event, error)) {
    std::fprintf(stderr, "ibv_bad_peer: the receiver did not disconnect within 5 s\n");
    return 1;
  }
  step(std::string("event: ") + rdma_event_str(event.type));
  if (event.type != RDMA_CM_EVENT_DISCONNECTED) return 1;
  rdma_disconnect(c.id);
  step("disconnected by the receiver, as it should be");
  return 0;
}
