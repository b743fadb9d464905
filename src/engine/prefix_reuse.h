#pragma once
// How much of a free slot's resident tokens a new prompt may reuse (scheduler.h, prefix reuse).
//
// A full cache keeps every position, so any shared prefix is valid. A sliding layer's ring, or
// a short convolution's (executor::Capabilities::ring_rows), holds only the latest positions:
// writing position q + rows replaced q. Prefilling from n needs positions n - rows + 1 .. n - 1
// (the window of the query at n), which are intact only if nothing at n or later was written over
// them: the slot's highest write is its last resident position, or one past it (an idle decode row
// writes its next row). So once a slot has written `rows` positions, only the whole resident prefix
// is reusable; a shorter one is refused (the prompt is prefilled from position 0).
#include <cstdint>

namespace xlacel::engine {

// The leading tokens to reuse of the `common` ones a prompt shares with a free slot that holds
// `resident` tokens, when its rings keep `ring_rows` positions (0: no ring).
int64_t reusable_prefix(int64_t common, int64_t resident, int64_t ring_rows);

}  // namespace xlacel::engine
