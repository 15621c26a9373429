// verify_event_record (event_record_check.hpp): each fragment through verify_superfragment.
#include "files/event_record_check.hpp"

#include <span>

#include "daqx/apps/text.hpp"
#include "daqx/evb/consumer.hpp"
#include "format/superfragment_check.hpp"

namespace daqx::evb {

RecordVerdict verify_event_record(const EventFileRecord& record) {
  RecordVerdict verdict;
  verdict.flagged = (record.flags & event_flags::corrupt) != 0;
  for (const EventFileFragment& fragment : record.fragments) {
    ++verdict.checked;
    const std::span<const std::byte> pieces[1] = {fragment.bytes};
    const FragmentCheck check = verify_superfragment(pieces, record.event, fragment.contributor, true);
    if (check.ok) continue;
    ++verdict.failed;
    verdict.problems.push_back(apps::concatenate({"event ", std::to_string(record.event), " contributor ",
                                                  std::to_string(fragment.contributor), ": ", check.problem,
                                                  verdict.flagged ? " (flagged corrupt)" : ""}));
  }
  return verdict;
}

}  // namespace daqx::evb
