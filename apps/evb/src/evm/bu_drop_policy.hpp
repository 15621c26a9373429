// When the EvM drops a builder unit and how it takes one in again: the decisions on the BU's record (silence,
// generation, readmission, what a drop forgets); the EvM carries out the messaging they call for.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daqx/api/application.hpp"
#include "daqx/evb/protocol.hpp"
#include "evm/bu_proxy.hpp"

namespace daqx::evb::evm {

class BuDropPolicy {
 public:
  explicit BuDropPolicy(double bu_timeout = 0) : bu_timeout_(bu_timeout) {}

  // Why a taking-part BU must be dropped for its silence (longer than buTimeout), or nothing.
  std::optional<std::string> check_liveness(const BuProxy& bu, Clock::time_point now) const;

  // What a request says about its BU: it takes part, it answered a reset (taken in, possibly again after a
  // drop), or it is of another generation or incarnation (new, dropped or restarted) and its credits are refused.
  enum class Admission { current, taken_in, taken_in_again, refused };
  // Marks a BU that answered the reset alive.
  Admission admit(BuProxy& bu, const Request& request) const;

  // A refused BU is taken in by a reset with its generation: unless one went out just now to this
  // incarnation, start again (unknown until it answers) and return true: the EvM sends the reset and the
  // RUs already down.
  bool readmit(BuProxy& bu, const Request& request, Clock::time_point now) const;

  // Drops a BU: the events of its outstanding batches are lost (returned), its credits and batches forgotten,
  // and its generation moves on so that nothing of the old one is taken. The EvM tells the RUs.
  std::uint64_t drop(BuProxy& bu, const std::string& why) const;
  static std::string drop_message(const BuProxy& bu, const std::string& why, std::uint64_t lost);

  // The status reason while every BU of the run has been dropped and none taken in again, naming each drop;
  // nothing otherwise.
  static std::optional<std::string> no_builder_left(const std::vector<BuProxy>& bus);

  // The BUs dropped and not taken in again, each with its drop's reason: "BU 201 dropped: ...; BU 203 ...".
  static std::string out_of_run(const std::vector<BuProxy>& bus);

 private:
  double bu_timeout_;  // s
};

}  // namespace daqx::evb::evm
