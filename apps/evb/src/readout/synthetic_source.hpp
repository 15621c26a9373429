// The synthetic data source of RUs (and of the EvM's trigger fragment): every event's super-fragment is
// `sources` CMS-style fragments (fragment_format.hpp) with log-normal payload sizes and a pattern and CRC-32C
// the BU can check, all a pure function of the shape, the event number and the contributor, so a BU can tell
// a wrong byte, a misrouted fragment or a mixed-up event. Written by SuperFragmentWriter as it is read.
#pragma once

#include "format/fragment_format.hpp"
#include "readout/data_source.hpp"

namespace daqx::evb::readout {

class SyntheticSource final : public DataSource {
 public:
  SyntheticSource() = default;
  // contributor is written into every source header (the sender's TID).
  SyntheticSource(const FragmentShape& shape, std::uint32_t contributor) : shape_(shape), contributor_(contributor) {}

  std::size_t size_of(std::uint64_t event) const noexcept override;
  std::unique_ptr<SuperFragmentCursor> cursor() const override;

 private:
  FragmentShape shape_;
  std::uint32_t contributor_ = 0;
};

}  // namespace daqx::evb::readout
