// Transitional: the synthetic super-fragment, now in fragment_format.hpp, superfragment_writer.hpp and
// superfragment_check.hpp. Kept only for ru.hpp and fragment_sender.hpp, which are being split separately;
// remove once they include what they use.
#pragma once

#include "fragment_format.hpp"
#include "superfragment_check.hpp"
#include "superfragment_writer.hpp"
