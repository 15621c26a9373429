// SyntheticSource's cursor: a SuperFragmentWriter over the source's shape.
#include "readout/synthetic_source.hpp"

#include "format/superfragment_writer.hpp"

namespace daqx::evb::readout {

namespace {

class SyntheticCursor final : public SuperFragmentCursor {
 public:
  SyntheticCursor(const FragmentShape& shape, std::uint32_t contributor) : shape_(shape), contributor_(contributor) {}
  std::size_t begin(std::uint64_t event) noexcept override { return writer_.begin(shape_, event, contributor_); }
  std::size_t write(std::byte* out, std::size_t room) noexcept override { return writer_.write(out, room); }
  std::size_t total() const noexcept override { return writer_.total(); }
  std::size_t remaining() const noexcept override { return writer_.remaining(); }

 private:
  FragmentShape shape_;
  std::uint32_t contributor_;
  SuperFragmentWriter writer_;
};

}  // namespace

std::size_t SyntheticSource::size_of(std::uint64_t event) const noexcept { return superfragment_size(shape_, event); }

std::unique_ptr<SuperFragmentCursor> SyntheticSource::cursor() const {
  return std::make_unique<SyntheticCursor>(shape_, contributor_);
}

}  // namespace daqx::evb::readout
