#pragma once
// stablehlo.if: one of two branches runs, chosen by a value the graph computes. stablehlo.while:
// a body runs again and again on the values it carries (a mixture of experts runs its blocks of
// rows in one body, which a compiler compiles once however many blocks there are). Each branch,
// condition or body is a fresh block that reads values of the block the op lives in through
// Block::capture.
#include <functional>
#include <vector>

#include "stablehlo/function.h"

namespace xlacel::stablehlo {

// Builds a branch in `branch`: capture what it reads, then return its results.
using Branch = std::function<std::vector<Value>(Block& branch)>;

// `pred` i1 []: `then_branch` runs when true, `else_branch` otherwise. Both must return values
// of the same types, which the op returns; they may capture only values of pred's block.
std::vector<Value> conditional(Value pred, const Branch& then_branch, const Branch& else_branch);

// Builds a loop's condition (returning one i1 []) or body (returning values of the carried
// types) in `block`, from the carried values (its arguments): capture what else it reads.
using LoopBlock =
    std::function<std::vector<Value>(Block& block, const std::vector<Value>& carried)>;

// stablehlo.while: carries `initial` (at least one value, all of one block) through `body` while
// `condition` holds; returns the values carried out.
std::vector<Value> while_loop(const std::vector<Value>& initial, const LoopBlock& condition,
                              const LoopBlock& body);

// A counted loop: `body` runs for i = 0 .. count - 1, given {i (i32 []), the values `initial`
// starts} and returning the values for the next (without i); returns them after the last.
// `count` is a constant or an i32 [] the graph computes (of the initial values' block).
std::vector<Value> counted_loop(int64_t count, const std::vector<Value>& initial,
                                const LoopBlock& body);
std::vector<Value> counted_loop(Value count, const std::vector<Value>& initial,
                                const LoopBlock& body);

}  // namespace xlacel::stablehlo
