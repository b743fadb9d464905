#pragma once
// Prints functions and modules as MLIR text.
//
// Syntax: functions use the pretty func.func form (accepted by every MLIR parser); every op in a
// body, func.return and func.call included, uses MLIR's *generic* op form:
//
//   %3 = "stablehlo.add"(%1, %2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
//   %7 = "stablehlo.reduce"(%5, %6) ({
//   ^bb0(%8: tensor<f32>, %9: tensor<f32>):
//     %10 = "stablehlo.add"(%8, %9) : (tensor<f32>, tensor<f32>) -> tensor<f32>
//     "stablehlo.return"(%10) : (tensor<f32>) -> ()
//   }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
//
// The generic form is part of core MLIR, so both iree-compile and XLA's StableHLO parser
// accept it for every op, with no dependence on each op's custom assembly (which changes between
// StableHLO versions). Attributes are printed in a sorted dictionary, as MLIR prints them.
//
// Names: arguments keep their names (%tokens); every other value is numbered %0, %1, ... in
// order of appearance over the whole function (nested bodies included, result before its body);
// an op with several results is %N:K and its results %N#0 .. %N#K-1. The same graph always
// prints byte-identical text.
#include <string>

#include "stablehlo/function.h"

namespace xlacel::stablehlo {

// func.func text for `function` (which must be finished), each line indented by `indent` spaces.
std::string print_function(const Function& function, int indent = 0);

}  // namespace xlacel::stablehlo
