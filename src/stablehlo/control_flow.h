#pragma once
// stablehlo.if: one of two branches runs, chosen by a value the graph computes (a mixture of
// experts skips the experts no row chose). Each branch is a fresh block that reads values of the
// block the op lives in through Block::capture.
#include <functional>
#include <vector>

#include "stablehlo/function.h"

namespace xlacel::stablehlo {

// Builds a branch in `branch`: capture what it reads, then return its results.
using Branch = std::function<std::vector<Value>(Block& branch)>;

// `pred` i1 []: `then_branch` runs when true, `else_branch` otherwise. Both must return values
// of the same types, which the op returns; they may capture only values of pred's block.
std::vector<Value> conditional(Value pred, const Branch& then_branch, const Branch& else_branch);

}  // namespace xlacel::stablehlo
