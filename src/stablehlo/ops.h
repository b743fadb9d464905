#pragma once
// Everything needed to author a model graph: types, functions, modules and all op families.
#include "stablehlo/constant.h"
#include "stablehlo/control_flow.h"
#include "stablehlo/data_movement.h"
#include "stablehlo/dot.h"
#include "stablehlo/elementwise.h"
#include "stablehlo/foreign.h"
#include "stablehlo/function.h"
#include "stablehlo/module.h"
#include "stablehlo/printer.h"
#include "stablehlo/reduce.h"
#include "stablehlo/scatter.h"
#include "stablehlo/types.h"
