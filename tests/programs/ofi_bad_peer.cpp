// A libfabric client that connects to a ptofi endpoint the proper way and then sends one malformed frame, for
// the transport suite's bad-peer test: the receiver must close this connection alone and count it.
//
//   ofi_bad_peer --provider tcp --host H --port P --case CASE [--target T]
//
// CASE: bad-magic, oversized, unknown-target, truncated (a malformed frame on a connection of its own), or no-id,
// wrong-id (a good frame without the connection id, or with a wrong one, where the receiver shares a receive
// context: nobody's message, dropped and counted).
//
// A receiver that shares a receive context gives the connection an id in its accept data (8 bytes); the client
// puts it on every message as remote CQ data, as ptofi's senders do.
// Each libfabric message carries one piece of a frame, the first starting with daqx's 32-byte frame header
// (docs/wire-format.md). The receiver sends small credit messages back: 16 receive buffers of 64 bytes give them
// somewhere to land, and the first one is awaited (briefly) before sending, as a real sender would.
// Exit codes: 0 sent and closed, 1 usage, 2 libfabric failed, 3 a completion did not come in time.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../support/frame_bytes.hpp"
#include "daqx/api/frame.hpp"

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kReceiveBuffers = 16;
constexpr std::size_t kReceiveBufferSize = 64;
constexpr std::size_t kMaxMessage = 4096;
constexpr int kConnectMillis = 5000;
constexpr auto kCompletionLimit = std::chrono::seconds(5);
constexpr auto kCreditLimit = std::chrono::seconds(2);

struct Options {
  std::string provider = "tcp";
  std::string host = "127.0.0.1";
  std::string port;
  std::string kind;
  daqx::Tid target = 1;  // an application the receiver has (for the cases that are not about the target)
};

int usage(const char* why) {
  std::fprintf(stderr, "ofi_bad_peer: %s\nusage: ofi_bad_peer --provider NAME --host H --port P "
                       "--case bad-magic|oversized|unknown-target|truncated [--target TID]\n", why);
  return 1;
}

// What stays open, closed in reverse order of opening.
struct Fabric {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_eq* eq = nullptr;
  fid_domain* domain = nullptr;
  fid_cq* cq = nullptr;
  fid_ep* endpoint = nullptr;
  fid_mr* region = nullptr;
  void* descriptor = nullptr;
  ~Fabric() {
    if (endpoint != nullptr) fi_close(&endpoint->fid);
    if (region != nullptr) fi_close(&region->fid);
    if (cq != nullptr) fi_close(&cq->fid);
    if (domain != nullptr) fi_close(&domain->fid);
    if (eq != nullptr) fi_close(&eq->fid);
    if (fabric != nullptr) fi_close(&fabric->fid);
    if (info != nullptr) fi_freeinfo(info);
  }
};

bool failed(int code, const char* what) {
  if (code == 0) return false;
  std::fprintf(stderr, "ofi_bad_peer: %s: %s\n", what, fi_strerror(code < 0 ? -code : code));
  return true;
}

// One posted operation; libfabric hands the context back with its completion.
struct Operation {
  fi_context2 context{};
  bool receive = false;
  bool done = false;
};

// Reads the completion queue once; returns false on a fatal error.
bool poll(fid_cq* cq, std::size_t& receives_done) {
  std::array<fi_cq_entry, 16> entries{};
  ssize_t got = fi_cq_read(cq, entries.data(), entries.size());
  if (got == -FI_EAGAIN) return true;
  if (got == -FI_EAVAIL) {
    fi_cq_err_entry error{};
    fi_cq_readerr(cq, &error, 0);
    if (error.op_context != nullptr) static_cast<Operation*>(error.op_context)->done = true;
    std::fprintf(stderr, "ofi_bad_peer: completion error: %s\n", fi_strerror(error.err));
    return true;  // a receive cancelled by the peer's close, or a send the peer refused: not ours to judge
  }
  if (got < 0) return !failed(static_cast<int>(got), "fi_cq_read");
  for (ssize_t i = 0; i < got; ++i) {
    auto* op = static_cast<Operation*>(entries[static_cast<std::size_t>(i)].op_context);
    if (op == nullptr) continue;
    op->done = true;
    if (op->receive) ++receives_done;
  }
  return true;
}

std::array<std::byte, daqx::kFrameHeaderSize> header(std::uint32_t total, daqx::Tid target) {
  return daqx::test::frame_header_bytes(total, target, 4243);
}

// The messages of the case: each at most kMaxMessage bytes.
std::vector<std::vector<std::byte>> messages_for(const Options& options) {
  auto message = [](const std::array<std::byte, daqx::kFrameHeaderSize>& head, std::size_t payload) {
    std::vector<std::byte> bytes(head.begin(), head.end());
    bytes.resize(head.size() + payload, std::byte{0x5a});
    return bytes;
  };
  if (options.kind == "bad-magic") {
    std::vector<std::byte> garbage(64);
    const char text[] = "this is not a daqx frame, and its first two bytes are no magic..";
    std::memcpy(garbage.data(), text, garbage.size());
    return {garbage};
  }
  if (options.kind == "oversized") return {message(header(1u << 30, options.target), kMaxMessage - daqx::kFrameHeaderSize)};
  if (options.kind == "unknown-target") return {message(header(64, 4242), 64 - daqx::kFrameHeaderSize)};
  if (options.kind == "truncated") return {message(header(1u << 20, options.target), 100)};
  if (options.kind == "no-id" || options.kind == "wrong-id") return {message(header(64, options.target), 64 - daqx::kFrameHeaderSize)};
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (argc % 2 == 0) return usage("every option takes a value");
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string name = argv[i], value = argv[i + 1];
    if (name == "--provider") options.provider = value;
    else if (name == "--host") options.host = value;
    else if (name == "--port") options.port = value;
    else if (name == "--case") options.kind = value;
    else if (name == "--target") options.target = static_cast<daqx::Tid>(std::stoul(value));
    else return usage(("unknown option " + name).c_str());
  }
  if (options.port.empty()) return usage("--port is required");
  const std::vector<std::vector<std::byte>> messages = messages_for(options);
  if (messages.empty()) return usage("--case must be bad-magic, oversized, unknown-target, truncated, no-id or wrong-id");

  // The buffers outlive the fabric objects (declared first, destroyed last): the provider may touch posted
  // buffers until the endpoint is closed. One region holds the receive buffers and the messages.
  std::size_t total = kReceiveBuffers * kReceiveBufferSize;
  for (const auto& m : messages) total += m.size();
  std::vector<std::byte> memory(total);
  std::array<Operation, kReceiveBuffers> receives{};
  std::vector<Operation> sends(messages.size());

  Fabric f;
  fi_info* hints = fi_allocinfo();
  hints->fabric_attr->prov_name = strdup(options.provider.c_str());
  hints->ep_attr->type = FI_EP_MSG;
  hints->caps = FI_MSG;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  int error = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), options.host.c_str(), options.port.c_str(), 0,
                         hints, &f.info);
  fi_freeinfo(hints);
  if (failed(error, "fi_getinfo")) return 2;
  std::printf("provider %s, fabric %s, domain %s\n", f.info->fabric_attr->prov_name, f.info->fabric_attr->name,
              f.info->domain_attr->name);

  fi_eq_attr eq_attr{};
  eq_attr.wait_obj = FI_WAIT_UNSPEC;
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_CONTEXT;
  cq_attr.wait_obj = FI_WAIT_NONE;
  if (failed(fi_fabric(f.info->fabric_attr, &f.fabric, nullptr), "fi_fabric") ||
      failed(fi_eq_open(f.fabric, &eq_attr, &f.eq, nullptr), "fi_eq_open") ||
      failed(fi_domain(f.fabric, f.info, &f.domain, nullptr), "fi_domain") ||
      failed(fi_cq_open(f.domain, &cq_attr, &f.cq, nullptr), "fi_cq_open") ||
      failed(fi_endpoint(f.domain, f.info, &f.endpoint, nullptr), "fi_endpoint") ||
      failed(fi_ep_bind(f.endpoint, &f.eq->fid, 0), "fi_ep_bind eq") ||
      failed(fi_ep_bind(f.endpoint, &f.cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind cq") ||
      failed(fi_enable(f.endpoint), "fi_enable"))
    return 2;

  // Registered when the provider wants local descriptors.
  if ((f.info->domain_attr->mr_mode & FI_MR_LOCAL) != 0) {
    if (failed(fi_mr_reg(f.domain, memory.data(), memory.size(), FI_SEND | FI_RECV, 0, 1, 0, &f.region, nullptr),
               "fi_mr_reg"))
      return 2;
    f.descriptor = fi_mr_desc(f.region);
  }

  if (failed(fi_connect(f.endpoint, f.info->dest_addr, nullptr, 0), "fi_connect")) return 2;
  union {
    fi_eq_cm_entry entry;
    std::uint8_t space[sizeof(fi_eq_cm_entry) + 64];
  } connected{};
  std::uint32_t event = 0;
  ssize_t got = fi_eq_sread(f.eq, &event, &connected.entry, sizeof connected, kConnectMillis, 0);
  if (got == -FI_EAVAIL) {
    fi_eq_err_entry eq_error{};
    fi_eq_readerr(f.eq, &eq_error, 0);
    std::fprintf(stderr, "ofi_bad_peer: connecting to %s:%s: %s\n", options.host.c_str(), options.port.c_str(),
                 fi_strerror(eq_error.err));
    return 2;
  }
  if (got < 0) {
    failed(static_cast<int>(got), "fi_eq_sread (waiting 5 s for FI_CONNECTED)");
    return 3;
  }
  if (event != FI_CONNECTED) {
    std::fprintf(stderr, "ofi_bad_peer: expected FI_CONNECTED, got event %u\n", event);
    return 2;
  }
  std::printf("connected to %s:%s\n", options.host.c_str(), options.port.c_str());
  // The connection's id, when the receiver gave one (little-endian, 8 bytes).
  const bool has_id = static_cast<std::size_t>(got) >= sizeof(fi_eq_cm_entry) + 8;
  std::uint64_t id = 0;
  for (int i = 0; has_id && i < 8; ++i) id |= static_cast<std::uint64_t>(connected.entry.data[i]) << (8 * i);
  if (options.kind == "wrong-id") id ^= std::uint64_t{1} << 40;  // its serial, someone else's secret
  const bool send_id = has_id && options.kind != "no-id";
  std::printf("connection id %s\n", has_id ? "given" : "not given");

  for (std::size_t i = 0; i < kReceiveBuffers; ++i) {
    receives[i].receive = true;
    if (failed(static_cast<int>(fi_recv(f.endpoint, memory.data() + i * kReceiveBufferSize, kReceiveBufferSize,
                                        f.descriptor, 0, &receives[i].context)),
               "fi_recv"))
      return 2;
  }
  std::size_t receives_done = 0;
  const auto credit_deadline = Clock::now() + kCreditLimit;
  while (receives_done == 0 && Clock::now() < credit_deadline) {
    if (!poll(f.cq, receives_done)) return 2;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::printf("%s\n", receives_done > 0 ? "credit message received" : "no credit message: sending anyway");

  std::size_t offset = kReceiveBuffers * kReceiveBufferSize;
  const auto deadline = Clock::now() + kCompletionLimit;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    std::byte* at = memory.data() + offset;
    std::memcpy(at, messages[i].data(), messages[i].size());
    offset += messages[i].size();
    for (;;) {
      ssize_t posted = send_id ? fi_senddata(f.endpoint, at, messages[i].size(), f.descriptor, id, 0, &sends[i].context)
                               : fi_send(f.endpoint, at, messages[i].size(), f.descriptor, 0, &sends[i].context);
      if (posted == 0) break;
      if (posted != -FI_EAGAIN) {
        failed(static_cast<int>(posted), "fi_send");
        return 2;
      }
      if (Clock::now() >= deadline) {
        std::fprintf(stderr, "ofi_bad_peer: fi_send stayed busy for 5 s\n");
        return 3;
      }
      if (!poll(f.cq, receives_done)) return 2;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  auto all_sent = [&] {
    for (const Operation& op : sends)
      if (!op.done) return false;
    return true;
  };
  while (!all_sent() && Clock::now() < deadline) {
    if (!poll(f.cq, receives_done)) return 2;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!all_sent()) {
    std::fprintf(stderr, "ofi_bad_peer: no send completion within 5 s\n");
    return 3;
  }
  std::printf("sent %zu message(s) for case %s; closing\n", messages.size(), options.kind.c_str());
  fi_shutdown(f.endpoint, 0);
  return 0;  // Fabric closes the endpoint and everything under it
}
