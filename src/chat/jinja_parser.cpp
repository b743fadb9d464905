#include "chat/jinja_parser.h"

#include <initializer_list>
#include <string>
#include <utility>

#include "chat/jinja_lexer.h"
#include "common/error.h"

namespace xlacel::jinja {
namespace {

constexpr int kMaxTemplateNesting = 200;

class Parser {
 public:
  Parser(std::vector<Token> tokens, std::string_view where)
      : tokens_(std::move(tokens)), where_(where) {}

  Template parse_template() {
    Template t;
    t.body = subparse({});
    return t;
  }

 private:
  // ---- token helpers ----
  const Token& current() const { return tokens_[pos_]; }
  const Token& look() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool is_op(const char* op) const {
    return current().type == TokenType::kOperator && current().value == op;
  }
  bool is_name(const char* name) const {
    return current().type == TokenType::kName && current().value == name;
  }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  [[noreturn]] void error(const std::string& problem, int line = -1) const {
    fail(where_, "line {}: syntax error: {}", line < 0 ? current().line : line, problem);
  }
  [[noreturn]] void unsupported(const std::string& construct, int line) const {
    fail(where_, "line {}: unsupported: {}", line, construct);
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) {
      error(std::string("expected token '") + op + "', got '" + describe(current()) + "'");
    }
  }
  void expect_type(TokenType type, const char* what) {
    if (current().type != type) {
      error(std::string("expected token '") + what + "', got '" + describe(current()) + "'");
    }
    next();
  }
  std::string expect_name() {
    if (current().type != TokenType::kName) {
      error("expected token 'name', got '" + describe(current()) + "'");
    }
    return next().value;
  }
  void expect_name(const char* name) {
    if (!skip_name(name)) {
      error(std::string("expected token '") + name + "', got '" + describe(current()) + "'");
    }
  }

  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxTemplateNesting) p.error("template nested too deeply");
    }
    ~DepthGuard() { --p.depth_; }
  };

  static ExprPtr make(ExprKind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // ---- statements ----
  Body subparse(std::initializer_list<const char*> end_tokens) {
    DepthGuard guard(*this);
    Body body;
    while (current().type != TokenType::kEof) {
      const Token& token = current();
      if (token.type == TokenType::kData) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kText;
        s->line = token.line;
        s->text = token.value;
        body.push_back(std::move(s));
        next();
      } else if (token.type == TokenType::kVariableBegin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kPrint;
        s->line = current().line;
        s->expr = parse_tuple(false, true, {}, false);
        expect_type(TokenType::kVariableEnd, "end of print statement");
        body.push_back(std::move(s));
      } else if (token.type == TokenType::kBlockBegin) {
        next();
        for (const char* end : end_tokens) {
          if (is_name(end)) return body;
        }
        body.push_back(parse_statement());
        expect_type(TokenType::kBlockEnd, "end of statement block");
      } else {
        error("unexpected '" + describe(token) + "'");
      }
    }
    if (end_tokens.size() > 0) {
      std::string looking;
      for (const char* end : end_tokens)
        looking += (looking.empty() ? "" : " or ") + std::string(end);
      error("Unexpected end of template. Jinja was looking for the following tags: " + looking);
    }
    return body;
  }

  Body parse_statements(std::initializer_list<const char*> end_tokens, bool drop_needle) {
    skip_op(":");
    expect_type(TokenType::kBlockEnd, "end of statement block");
    Body body = subparse(end_tokens);
    if (current().type == TokenType::kEof) error("unexpected end of template");
    if (drop_needle) next();
    return body;
  }

  StmtPtr parse_statement() {
    const Token& token = current();
    if (token.type != TokenType::kName) error("tag name expected");
    const std::string tag = token.value;
    int line = token.line;
    if (tag == "for") return parse_for();
    if (tag == "if") return parse_if();
    if (tag == "set") return parse_set();
    if (tag == "macro") return parse_macro();
    if (tag == "call") return parse_call_block();
    if (tag == "filter") return parse_filter_block();
    if (tag == "with") return parse_with();
    if (tag == "print") {
      next();
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kPrint;
      s->line = line;
      auto tuple = make(ExprKind::kConcat, line);  // prints each expression in turn
      while (current().type != TokenType::kBlockEnd) {
        if (!tuple->children.empty()) expect_op(",");
        tuple->children.push_back(parse_expression(true));
      }
      s->expr = std::move(tuple);
      return s;
    }
    if (tag == "break" || tag == "continue") {
      next();
      if (loop_depth_ == 0) error("'" + tag + "' outside loop", line);
      auto s = std::make_unique<Stmt>();
      s->kind = tag == "break" ? StmtKind::kBreak : StmtKind::kContinue;
      s->line = line;
      return s;
    }
    if (tag == "generation") {
      next();
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kScope;
      s->line = line;
      s->body = parse_statements({"endgeneration"}, true);
      return s;
    }
    if (tag == "block" || tag == "extends" || tag == "include" || tag == "import" ||
        tag == "from" || tag == "autoescape" || tag == "do") {
      unsupported("{% " + tag + " %}", line);
    }
    error("Encountered unknown tag '" + tag + "'.", line);
  }

  StmtPtr parse_for() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kFor;
    s->line = next().line;
    s->target = parse_assign_target(true, false, {"in"}, false);
    expect_name("in");
    s->expr = parse_tuple(false, false, {"recursive"}, false);
    if (skip_name("if")) s->filter = parse_expression(true);
    if (is_name("recursive")) unsupported("recursive for loops", current().line);
    ++loop_depth_;
    s->body = parse_statements({"endfor", "else"}, false);
    --loop_depth_;
    if (next().value == "endfor") return s;
    int saved = loop_depth_;
    loop_depth_ = 0;  // `else` runs outside the loop
    s->else_body = parse_statements({"endfor"}, true);
    loop_depth_ = saved;
    return s;
  }

  StmtPtr parse_if() {
    auto result = std::make_unique<Stmt>();
    result->kind = StmtKind::kIf;
    result->line = next().line;
    Stmt* node = result.get();
    while (true) {
      node->expr = parse_tuple(false, false, {}, false);
      node->body = parse_statements({"elif", "else", "endif"}, false);
      const Token& token = next();
      if (token.value == "elif") {
        auto elif = std::make_unique<Stmt>();
        elif->kind = StmtKind::kIf;
        elif->line = current().line;
        Stmt* raw = elif.get();
        node->else_body.push_back(std::move(elif));
        node = raw;
        continue;
      }
      if (token.value == "else") node->else_body = parse_statements({"endif"}, true);
      break;
    }
    return result;
  }

  StmtPtr parse_set() {
    auto s = std::make_unique<Stmt>();
    s->line = next().line;
    s->target = parse_assign_target(true, false, {}, true);
    if (skip_op("=")) {
      s->kind = StmtKind::kSet;
      s->expr = parse_tuple(false, true, {}, false);
      return s;
    }
    s->kind = StmtKind::kSetBlock;
    if (s->target->kind == ExprKind::kTuple) error("can't assign a block to a tuple", s->line);
    s->filter = parse_filter(nullptr, false);
    s->body = parse_statements({"endset"}, true);
    return s;
  }

  void parse_signature(Stmt& s) {
    expect_op("(");
    while (!is_op(")")) {
      if (!s.params.empty()) expect_op(",");
      s.params.push_back(expect_name());
      if (skip_op("=")) {
        s.defaults.push_back(parse_expression(true));
      } else if (!s.defaults.empty()) {
        error("non-default argument follows default argument");
      }
    }
    expect_op(")");
  }

  StmtPtr parse_macro() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kMacro;
    s->line = next().line;
    s->name = expect_name();
    parse_signature(*s);
    int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_statements({"endmacro"}, true);
    loop_depth_ = saved;
    return s;
  }

  StmtPtr parse_call_block() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kCallBlock;
    s->line = next().line;
    if (is_op("(")) parse_signature(*s);
    s->expr = parse_expression(true);
    if (s->expr->kind != ExprKind::kCall) error("expected call", s->line);
    int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_statements({"endcall"}, true);
    loop_depth_ = saved;
    return s;
  }

  StmtPtr parse_filter_block() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kFilterBlock;
    s->line = next().line;
    s->filter = parse_filter(nullptr, true);
    s->body = parse_statements({"endfilter"}, true);
    return s;
  }

  StmtPtr parse_with() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kWith;
    s->line = next().line;
    while (current().type != TokenType::kBlockEnd) {
      if (!s->with_targets.empty()) expect_op(",");
      auto target = parse_assign_target(true, false, {}, false);
      expect_op("=");
      s->with_targets.push_back(std::move(target));
      s->with_values.push_back(parse_expression(true));
    }
    s->body = parse_statements({"endwith"}, true);
    return s;
  }

  ExprPtr parse_assign_target(bool with_tuple, bool name_only,
                              std::initializer_list<const char*> extra_end, bool with_namespace) {
    int line = current().line;
    ExprPtr target;
    if (name_only) {
      target = make(ExprKind::kName, line);
      target->name = expect_name();
      return target;
    }
    if (with_tuple) {
      target = parse_tuple(true, true, extra_end, false, with_namespace);
    } else {
      target = parse_primary(with_namespace);
    }
    auto assignable = [](const Expr& e) {
      return e.kind == ExprKind::kName || e.kind == ExprKind::kNSRef;
    };
    bool ok = assignable(*target);
    if (target->kind == ExprKind::kTuple) {
      ok = true;
      for (const auto& item : target->children) ok = ok && item->kind == ExprKind::kName;
    }
    if (!ok) error("can't assign to this expression", line);
    if (target->kind == ExprKind::kName &&
        (target->name == "true" || target->name == "false" || target->name == "none")) {
      error("can't assign to '" + target->name + "'", line);
    }
    return target;
  }

  // ---- expressions ----
  bool is_tuple_end(std::initializer_list<const char*> extra_end) const {
    TokenType t = current().type;
    if (t == TokenType::kVariableEnd || t == TokenType::kBlockEnd || is_op(")")) return true;
    for (const char* end : extra_end) {
      if (is_name(end)) return true;
    }
    return false;
  }

  ExprPtr parse_tuple(bool simplified, bool with_condexpr,
                      std::initializer_list<const char*> extra_end, bool explicit_parentheses,
                      bool with_namespace = false) {
    int line = current().line;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      args.push_back(simplified ? parse_primary(with_namespace) : parse_expression(with_condexpr));
      if (is_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
      line = current().line;
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parentheses) {
        error("Expected an expression, got '" + describe(current()) + "'");
      }
    }
    auto t = make(ExprKind::kTuple, line);
    t->children = std::move(args);
    return t;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    int line = current().line;
    ExprPtr expr1 = parse_or();
    while (skip_name("if")) {
      ExprPtr expr2 = parse_or();
      ExprPtr expr3;
      if (skip_name("else")) expr3 = parse_condexpr();
      auto c = make(ExprKind::kCondExpr, line);
      c->children.push_back(std::move(expr2));
      c->children.push_back(std::move(expr1));
      c->children.push_back(std::move(expr3));
      expr1 = std::move(c);
      line = current().line;
    }
    return expr1;
  }

  ExprPtr parse_or() {
    int line = current().line;
    ExprPtr left = parse_and();
    while (skip_name("or")) {
      auto node = make(ExprKind::kOr, line);
      node->children.push_back(std::move(left));
      node->children.push_back(parse_and());
      left = std::move(node);
      line = current().line;
    }
    return left;
  }

  ExprPtr parse_and() {
    int line = current().line;
    ExprPtr left = parse_not();
    while (skip_name("and")) {
      auto node = make(ExprKind::kAnd, line);
      node->children.push_back(std::move(left));
      node->children.push_back(parse_not());
      left = std::move(node);
      line = current().line;
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this);
      auto node = make(ExprKind::kNot, next().line);
      node->children.push_back(parse_not());
      return node;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    int line = current().line;
    ExprPtr expr = parse_math1();
    auto node = make(ExprKind::kCompare, line);
    node->children.push_back(std::move(expr));
    while (true) {
      static const std::pair<const char*, const char*> kOps[] = {
          {"==", "eq"}, {"!=", "ne"}, {"<", "lt"}, {"<=", "lteq"}, {">", "gt"}, {">=", "gteq"}};
      bool matched = false;
      for (const auto& [op, name] : kOps) {
        if (is_op(op)) {
          next();
          node->ops.emplace_back(name);
          matched = true;
          break;
        }
      }
      if (!matched) {
        if (skip_name("in")) {
          node->ops.emplace_back("in");
        } else if (is_name("not") && look().type == TokenType::kName && look().value == "in") {
          next();
          next();
          node->ops.emplace_back("notin");
        } else {
          break;
        }
      }
      node->children.push_back(parse_math1());
      node->line = current().line;
    }
    if (node->ops.empty()) return std::move(node->children[0]);
    node->line = line;
    return node;
  }

  ExprPtr binary(const char* op, ExprPtr left, ExprPtr right, int line) {
    auto node = make(ExprKind::kBinary, line);
    node->name = op;
    node->children.push_back(std::move(left));
    node->children.push_back(std::move(right));
    return node;
  }

  ExprPtr parse_math1() {
    int line = current().line;
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      std::string op = next().value;
      left = binary(op.c_str(), std::move(left), parse_concat(), line);
      line = current().line;
    }
    return left;
  }

  ExprPtr parse_concat() {
    int line = current().line;
    std::vector<ExprPtr> args;
    args.push_back(parse_math2());
    while (skip_op("~")) args.push_back(parse_math2());
    if (args.size() == 1) return std::move(args[0]);
    auto node = make(ExprKind::kConcat, line);
    node->children = std::move(args);
    return node;
  }

  ExprPtr parse_math2() {
    int line = current().line;
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = next().value;
      left = binary(op.c_str(), std::move(left), parse_pow(), line);
      line = current().line;
    }
    return left;
  }

  ExprPtr parse_pow() {
    int line = current().line;
    ExprPtr left = parse_unary(true);
    while (skip_op("**")) {
      left = binary("**", std::move(left), parse_unary(true), line);
      line = current().line;
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    int line = current().line;
    ExprPtr node;
    if (skip_op("-")) {
      node = make(ExprKind::kNeg, line);
      node->children.push_back(parse_unary(false));
    } else if (skip_op("+")) {
      node = make(ExprKind::kPos, line);
      node->children.push_back(parse_unary(false));
    } else {
      node = parse_primary(false);
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary(bool with_namespace) {
    DepthGuard guard(*this);
    const Token& token = current();
    int line = token.line;
    if (token.type == TokenType::kName) {
      next();
      const std::string& v = token.value;
      if (v == "true" || v == "false" || v == "True" || v == "False") {
        auto node = make(ExprKind::kConst, line);
        node->constant = Value::boolean(v == "true" || v == "True");
        return node;
      }
      if (v == "none" || v == "None") {
        auto node = make(ExprKind::kConst, line);
        node->constant = Value::none();
        return node;
      }
      if (with_namespace && is_op(".")) {
        next();
        auto node = make(ExprKind::kNSRef, line);
        node->name = v;
        node->attr = expect_name();
        return node;
      }
      auto node = make(ExprKind::kName, line);
      node->name = v;
      return node;
    }
    if (token.type == TokenType::kString) {
      std::string buf;
      while (current().type == TokenType::kString) buf += next().value;
      auto node = make(ExprKind::kConst, line);
      node->constant = Value::string(std::move(buf));
      return node;
    }
    if (token.type == TokenType::kInteger || token.type == TokenType::kFloat) {
      next();
      auto node = make(ExprKind::kConst, line);
      node->constant = token.type == TokenType::kInteger ? Value::integer(token.int_value)
                                                         : Value::floating(token.float_value);
      return node;
    }
    if (skip_op("(")) {
      ExprPtr node = parse_tuple(false, true, {}, true);
      expect_op(")");
      return node;
    }
    if (is_op("[")) {
      next();
      auto node = make(ExprKind::kList, line);
      while (!is_op("]")) {
        if (!node->children.empty()) expect_op(",");
        if (is_op("]")) break;
        node->children.push_back(parse_expression(true));
      }
      expect_op("]");
      return node;
    }
    if (is_op("{")) {
      next();
      auto node = make(ExprKind::kDict, line);
      while (!is_op("}")) {
        if (!node->children.empty()) expect_op(",");
        if (is_op("}")) break;
        node->children.push_back(parse_expression(true));
        expect_op(":");
        node->children.push_back(parse_expression(true));
      }
      expect_op("}");
      return node;
    }
    error("unexpected '" + describe(token) + "'");
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        break;
      }
    }
    return node;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        node = parse_filter(std::move(node), false);
      } else if (is_name("is")) {
        node = parse_test(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        break;
      }
    }
    return node;
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const Token& token = next();
    int line = token.line;
    if (token.value == ".") {
      const Token& attr = next();
      if (attr.type == TokenType::kName) {
        auto n = make(ExprKind::kGetAttr, line);
        n->name = attr.value;
        n->children.push_back(std::move(node));
        return n;
      }
      if (attr.type != TokenType::kInteger) error("expected name or number", attr.line);
      auto n = make(ExprKind::kGetItem, line);
      n->children.push_back(std::move(node));
      auto index = make(ExprKind::kConst, attr.line);
      index->constant = Value::integer(attr.int_value);
      n->children.push_back(std::move(index));
      return n;
    }
    std::vector<ExprPtr> args;
    while (!is_op("]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    expect_op("]");
    auto n = make(ExprKind::kGetItem, line);
    n->children.push_back(std::move(node));
    if (args.size() == 1) {
      n->children.push_back(std::move(args[0]));
    } else {
      auto t = make(ExprKind::kTuple, line);
      t->children = std::move(args);
      n->children.push_back(std::move(t));
    }
    return n;
  }

  ExprPtr parse_subscribed() {
    int line = current().line;
    auto slice = make(ExprKind::kSlice, line);
    if (is_op(":")) {
      next();
      slice->children.push_back(nullptr);
    } else {
      ExprPtr node = parse_expression(true);
      if (!is_op(":")) return node;
      next();
      slice->children.push_back(std::move(node));
    }
    if (is_op(":") || is_op("]") || is_op(",")) {
      slice->children.push_back(nullptr);
    } else {
      slice->children.push_back(parse_expression(true));
    }
    if (is_op(":")) {
      next();
      if (!is_op("]") && !is_op(",")) {
        slice->children.push_back(parse_expression(true));
      } else {
        slice->children.push_back(nullptr);
      }
    } else {
      slice->children.push_back(nullptr);
    }
    return slice;
  }

  void parse_call_args(Expr& node) {
    int line = current().line;
    expect_op("(");
    bool require_comma = false;
    while (!is_op(")")) {
      if (require_comma) {
        expect_op(",");
        if (is_op(")")) break;
      }
      if (is_op("*") || is_op("**")) unsupported("*args / **kwargs in calls", line);
      if (current().type == TokenType::kName && look().type == TokenType::kOperator &&
          look().value == "=") {
        std::string key = next().value;
        next();
        node.keywords.push_back(Keyword{key, parse_expression(true)});
      } else {
        if (!node.keywords.empty()) error("invalid syntax for function call expression", line);
        node.children.push_back(parse_expression(true));
      }
      require_comma = true;
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr node) {
    auto call = make(ExprKind::kCall, current().line);
    call->children.push_back(std::move(node));
    parse_call_args(*call);
    return call;
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    while (is_op("|") || start_inline) {
      if (!start_inline) next();
      int line = current().line;
      std::string name = expect_name();
      while (is_op(".")) {
        next();
        name += "." + expect_name();
      }
      auto filter = make(ExprKind::kFilter, line);
      filter->name = name;
      filter->children.push_back(std::move(node));
      if (is_op("(")) parse_call_args(*filter);
      node = std::move(filter);
      start_inline = false;
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    int line = next().line;
    bool negated = skip_name("not");
    std::string name = expect_name();
    while (is_op(".")) {
      next();
      name += "." + expect_name();
    }
    auto test = make(ExprKind::kTest, line);
    test->name = name;
    test->children.push_back(std::move(node));
    if (is_op("(")) {
      parse_call_args(*test);
    } else {
      TokenType t = current().type;
      bool starts_arg = t == TokenType::kName || t == TokenType::kString ||
                        t == TokenType::kInteger || t == TokenType::kFloat || is_op("(") ||
                        is_op("[") || is_op("{");
      if (starts_arg && !is_name("else") && !is_name("or") && !is_name("and")) {
        if (is_name("is")) error("You cannot chain multiple tests with is");
        ExprPtr arg = parse_primary(false);
        test->children.push_back(parse_postfix(std::move(arg)));
      }
    }
    if (!negated) return test;
    auto n = make(ExprKind::kNot, line);
    n->children.push_back(std::move(test));
    return n;
  }

  std::vector<Token> tokens_;
  std::string where_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Template parse(std::string_view source, std::string_view where) {
  return Parser(tokenize(source, where), where).parse_template();
}

}  // namespace xlacel::jinja
