#pragma once
// The syntax tree of a parsed template: expressions and statements, mirroring jinja2.nodes.
#include <memory>
#include <string>
#include <vector>

#include "chat/jinja_value.h"

namespace xlacel::jinja {

enum class ExprKind {
  kConst,
  kName,
  kGetAttr,  // children[0].name
  kGetItem,  // children[0][children[1]]
  kSlice,    // children: start, stop, step (each may be null)
  kCall,     // children[0](children[1..], keywords)
  kFilter,   // children[0] (null in filter blocks) | name(children[1..], keywords)
  kTest,     // children[0] is name(children[1..], keywords)
  kNeg,
  kPos,
  kNot,
  kAnd,
  kOr,
  kBinary,    // name: + - * / // % **
  kConcat,    // children joined with ~
  kCompare,   // children[0] ops[i] children[i+1]
  kCondExpr,  // children: test, then, else (else may be null)
  kList,
  kTuple,
  kDict,   // children: key0, value0, key1, value1, ...
  kNSRef,  // name.attr as an assignment target
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Keyword {
  std::string name;
  ExprPtr value;
};

struct Expr {
  ExprKind kind = ExprKind::kConst;
  int line = 0;
  Value constant;
  std::string name;
  std::string attr;  // kNSRef
  std::vector<ExprPtr> children;
  std::vector<Keyword> keywords;
  std::vector<std::string> ops;  // kCompare: eq ne lt lteq gt gteq in notin
};

enum class StmtKind {
  kText,
  kPrint,        // expr
  kIf,           // expr, body, else_body (elif chains nest an If in else_body)
  kFor,          // target, expr (iterable), filter (loop `if`), body, else_body
  kSet,          // target = expr
  kSetBlock,     // target, filter (may be null), body
  kMacro,        // name, params, defaults (aligned to the last params), body
  kCallBlock,    // params/defaults for caller, expr (the call), body
  kFilterBlock,  // filter (with null input), body
  kBreak,
  kContinue,
  kWith,   // targets/values in with_targets/with_values, body
  kScope,  // body (the {% generation %} extension)
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  StmtKind kind = StmtKind::kText;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr target;
  ExprPtr filter;
  Body body;
  Body else_body;
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;
  std::vector<ExprPtr> with_targets;
  std::vector<ExprPtr> with_values;
};

struct Template {
  Body body;
};

}  // namespace xlacel::jinja
