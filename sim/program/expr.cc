// The `when:` expression language: a recursive-descent parser that compiles
// straight to a flat postfix program, and a stack machine that evaluates it
// with a fixed-size stack (no allocation). && and || short-circuit through
// jumps, so `step > 0 && 100 % step == 0` never divides by zero.
#include "fleetsim/expr.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace fleetsim {
namespace {

// Deep enough for any sensible condition; bounds the evaluation stack.
constexpr int kMaxStack = 64;
constexpr int kMaxNesting = 64;

enum Code : uint8_t {
  kPush, kLoad, kAdd, kSub, kMul, kDiv, kMod, kEq, kNe, kLt, kLe, kGt, kGe,
  kNot, kNeg, kToBool,
  kAndJump,  // top == 0: keep it (as 0) and jump to value; else pop it
  kOrJump,   // top != 0: replace it by 1 and jump to value; else pop it
};

constexpr std::array<const char*, static_cast<size_t>(Var::kCount)> kVarNames = {
    "rank", "local_rank", "node", "step", "world_size", "tp_rank", "dp_rank", "pp_rank"};

enum class Tok : uint8_t { kEnd, kInt, kIdent, kOp, kLParen, kRParen, kBad };

struct Token {
  Tok kind = Tok::kEnd;
  size_t start = 0;  // 0-based offset in the text
  std::string_view text;
};

int64_t wrap(uint64_t v) { return static_cast<int64_t>(v); }

}  // namespace

const char* var_name(Var v) {
  const auto i = static_cast<size_t>(v);
  return i < kVarNames.size() ? kVarNames[i] : "?";
}

std::string closest_name(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string_view best;
  size_t best_dist = 3;  // only distances <= 2 count as a likely typo
  std::vector<size_t> prev, cur;
  for (std::string_view c : candidates) {
    prev.resize(c.size() + 1);
    cur.resize(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= word.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= c.size(); ++j) {
        const size_t sub = prev[j - 1] + (word[i - 1] == c[j - 1] ? 0 : 1);
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      }
      std::swap(prev, cur);
    }
    const size_t d = prev[c.size()];
    if (d < best_dist && d < word.size()) {
      best_dist = d;
      best = c;
    }
  }
  return std::string(best);
}

// Compiles one expression into Expr::code_. The first error wins; after it
// every method returns early.
struct Expr::Parser {
  std::string_view text;
  Expr* out = nullptr;
  size_t pos = 0;
  int depth = 0;        // current evaluation-stack depth of the emitted code
  int nesting = 0;      // recursion depth (parentheses and unary operators)
  std::optional<Diagnostic> error;

  Token peek() const {
    size_t p = pos;
    while (p < text.size() && (text[p] == ' ' || text[p] == '\t')) ++p;
    Token t;
    t.start = p;
    if (p >= text.size()) return t;
    const char c = text[p];
    auto is_ident = [](char ch, bool first) {
      return ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
             (!first && ch >= '0' && ch <= '9');
    };
    size_t e = p + 1;
    if (c >= '0' && c <= '9') {
      while (e < text.size() && ((text[e] >= '0' && text[e] <= '9') || is_ident(text[e], true))) ++e;
      t.kind = Tok::kInt;
    } else if (is_ident(c, true)) {
      while (e < text.size() && is_ident(text[e], false)) ++e;
      t.kind = Tok::kIdent;
    } else if (c == '(' || c == ')') {
      t.kind = c == '(' ? Tok::kLParen : Tok::kRParen;
    } else {
      const std::string_view two = text.substr(p, 2);
      if (two == "||" || two == "&&" || two == "==" || two == "!=" || two == "<=" || two == ">=") {
        e = p + 2;
        t.kind = Tok::kOp;
      } else if (std::string_view("<>+-*/%!").find(c) != std::string_view::npos) {
        t.kind = Tok::kOp;
      } else {
        t.kind = Tok::kBad;
      }
    }
    t.text = text.substr(p, e - p);
    return t;
  }

  void advance(const Token& t) { pos = t.start + t.text.size(); }

  void fail(size_t offset, std::string message) {
    if (error) return;
    Diagnostic d;
    d.loc.col = static_cast<int>(offset) + 1;
    d.message = std::move(message);
    error = std::move(d);
  }

  static std::string describe(const Token& t) {
    if (t.kind == Tok::kEnd) return "end of expression";
    return std::string("'").append(t.text) + "'";
  }

  void emit(uint8_t code, int64_t value, int stack_delta) {
    out->code_.push_back(Instr{code, value});
    depth += stack_delta;
    if (depth > kMaxStack) fail(pos, "expression too complex (evaluation stack over " +
                                         std::to_string(kMaxStack) + ")");
  }

  // A token that cannot appear where an operand or operator was expected.
  void fail_unexpected(const Token& t, const std::string& expected) {
    if (t.kind == Tok::kBad) {
      const char c = t.text[0];
      std::string hint;
      if (c == '=') hint = "; did you mean '=='?";
      if (c == '&') hint = "; did you mean '&&'?";
      if (c == '|') hint = "; did you mean '||'?";
      fail(t.start, std::string("unexpected character '").append(t.text) + "'" + hint +
                        (hint.empty() ? "; expected " + expected : ""));
      return;
    }
    fail(t.start, "expected " + expected + ", got " + describe(t));
  }

  void parse_primary(const char* after) {
    const Token t = peek();
    const std::string operand = after ? std::string("an operand after '") + after + "'"
                                      : std::string("an expression (a number, a variable or '(')");
    if (t.kind == Tok::kInt) {
      parse_int(t);
    } else if (t.kind == Tok::kIdent) {
      parse_var(t);
    } else if (t.kind == Tok::kLParen) {
      advance(t);
      if (++nesting > kMaxNesting) return fail(t.start, "expression nested too deeply");
      parse_binary(0);
      --nesting;
      const Token close = peek();
      if (error) return;
      if (close.kind != Tok::kRParen) {
        return fail_unexpected(close, "')' to close '(' at column " + std::to_string(t.start + 1));
      }
      advance(close);
    } else {
      fail_unexpected(t, operand);
    }
  }

  void parse_int(const Token& t) {
    int64_t v = 0;
    for (char c : t.text) {
      if (c < '0' || c > '9') return fail(t.start, std::string("bad number '").append(t.text) + "'; expected digits only");
      if (v > (std::numeric_limits<int64_t>::max() - (c - '0')) / 10) {
        return fail(t.start, std::string("number '").append(t.text) + "' is too large for a 64-bit integer");
      }
      v = v * 10 + (c - '0');
    }
    advance(t);
    emit(kPush, v, 1);
  }

  void parse_var(const Token& t) {
    for (size_t i = 0; i < kVarNames.size(); ++i) {
      if (t.text == kVarNames[i]) {
        advance(t);
        out->vars_used_ |= 1u << i;
        emit(kLoad, static_cast<int64_t>(i), 1);
        return;
      }
    }
    const std::vector<std::string_view> names(kVarNames.begin(), kVarNames.end());
    const std::string guess = closest_name(t.text, names);
    std::string msg = std::string("unknown variable '").append(t.text) + "'";
    if (!guess.empty()) msg += " (did you mean '" + guess + "'?)";
    msg += "; expected one of:";
    for (const char* n : kVarNames) msg += std::string(" ") + n;
    fail(t.start, msg);
  }

  void parse_unary(const char* after) {
    const Token t = peek();
    if (t.kind == Tok::kOp && (t.text == "!" || t.text == "-")) {
      advance(t);
      if (++nesting > kMaxNesting) return fail(t.start, "expression nested too deeply");
      parse_unary(t.text == "!" ? "!" : "-");
      --nesting;
      emit(t.text == "!" ? kNot : kNeg, 0, 0);
      return;
    }
    parse_primary(after);
  }

  // Binding strength of a binary operator token (higher binds tighter); 0 = not one.
  static int precedence(std::string_view op) {
    if (op == "||") return 1;
    if (op == "&&") return 2;
    if (op == "==" || op == "!=") return 3;
    if (op == "<" || op == "<=" || op == ">" || op == ">=") return 4;
    if (op == "+" || op == "-") return 5;
    if (op == "*" || op == "/" || op == "%") return 6;
    return 0;
  }

  static uint8_t binary_code(std::string_view op) {
    static constexpr std::pair<std::string_view, Code> kCodes[] = {
        {"==", kEq}, {"!=", kNe}, {"<", kLt}, {"<=", kLe}, {">", kGt}, {">=", kGe},
        {"+", kAdd}, {"-", kSub}, {"*", kMul}, {"/", kDiv}, {"%", kMod}};
    for (const auto& [s, c] : kCodes) if (s == op) return c;
    return kAdd;
  }

  // Precedence climbing: parses operators binding tighter than `min_prec`.
  void parse_binary(int min_prec, const char* after = nullptr) {
    parse_unary(after);
    while (!error) {
      const Token op = peek();
      const int prec = op.kind == Tok::kOp ? precedence(op.text) : 0;
      if (prec == 0 || prec <= min_prec) return;
      advance(op);
      const std::string op_name(op.text);
      if (op.text == "&&" || op.text == "||") {
        const size_t jump_at = out->code_.size();
        emit(op.text == "&&" ? kAndJump : kOrJump, 0, -1);
        parse_binary(prec, op.text == "&&" ? "&&" : "||");
        emit(kToBool, 0, 0);
        out->code_[jump_at].value = static_cast<int64_t>(out->code_.size());
        continue;
      }
      const size_t rhs_start = out->code_.size();
      const Token rhs = peek();
      parse_binary(prec, op_name_literal(op.text));
      if (error) return;
      if ((op.text == "/" || op.text == "%") && out->code_.size() == rhs_start + 1 &&
          out->code_[rhs_start].code == kPush && out->code_[rhs_start].value == 0) {
        return fail(rhs.start, std::string(op.text == "/" ? "division" : "modulo") +
                                   " by the constant 0; expected a non-zero divisor");
      }
      if (op.text == "/" || op.text == "%") add_divisor(rhs_start);
      emit(binary_code(op.text), 0, -1);
    }
  }

  // Records the divisor just compiled, code_[begin, end), and the variables it reads.
  void add_divisor(size_t begin) {
    Divisor d{static_cast<uint32_t>(begin), static_cast<uint32_t>(out->code_.size()), 0};
    for (size_t i = begin; i < out->code_.size(); ++i)
      if (out->code_[i].code == kLoad) d.vars_used |= 1u << static_cast<unsigned>(out->code_[i].value);
    out->divisors_.push_back(d);
  }

  // A stable C string for an operator (the token's view is not NUL-terminated).
  static const char* op_name_literal(std::string_view op) {
    static constexpr const char* kOps[] = {"||", "&&", "==", "!=", "<=", ">=", "<", ">",
                                           "+",  "-",  "*",  "/",  "%"};
    for (const char* o : kOps) if (op == o) return o;
    return "?";
  }
};

Result<Expr> Expr::parse(std::string_view text) {
  Expr e;
  e.text_ = std::string(text);
  Parser p;
  p.text = text;
  p.out = &e;
  p.parse_binary(0);
  if (!p.error) {
    const Token t = p.peek();
    if (t.kind == Tok::kRParen) {
      p.fail(t.start, "unmatched ')'; expected an operator or end of expression");
    } else if (t.kind != Tok::kEnd) {
      p.fail_unexpected(t, "an operator or end of expression");
    }
  }
  if (p.error) return *p.error;
  return e;
}

bool Expr::eval(const VarValues& vars, int64_t* out) const { return run(0, code_.size(), vars, out); }

bool Expr::zero_divisor_without(Var v, const VarValues& vars) const {
  const uint32_t bit = 1u << static_cast<unsigned>(v);
  for (const Divisor& d : divisors_) {
    if (d.vars_used & bit) continue;
    int64_t value = 0;
    if (!run(d.begin, d.end, vars, &value) || value == 0) return true;
  }
  return false;
}

bool Expr::run(size_t begin, size_t end, const VarValues& vars, int64_t* out) const {
  std::array<int64_t, kMaxStack + 1> st;
  size_t sp = 0;  // number of values on the stack
  size_t pc = begin;
  while (pc < end) {
    const Instr& in = code_[pc++];
    if (in.code == kPush) { st[sp++] = in.value; continue; }
    if (in.code == kLoad) { st[sp++] = vars[static_cast<size_t>(in.value)]; continue; }
    int64_t& top = st[sp - 1];
    switch (in.code) {
      case kNot: top = top == 0 ? 1 : 0; continue;
      case kNeg: top = wrap(0 - static_cast<uint64_t>(top)); continue;
      case kToBool: top = top != 0 ? 1 : 0; continue;
      case kAndJump:
        if (top == 0) { pc = static_cast<size_t>(in.value); } else { --sp; }
        continue;
      case kOrJump:
        if (top != 0) { top = 1; pc = static_cast<size_t>(in.value); } else { --sp; }
        continue;
      default: break;
    }
    const int64_t b = st[--sp];
    int64_t& a = st[sp - 1];
    const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    switch (in.code) {
      case kAdd: a = wrap(ua + ub); break;
      case kSub: a = wrap(ua - ub); break;
      case kMul: a = wrap(ua * ub); break;
      case kDiv:
      case kMod:
        // No value for x/0, and none for INT64_MIN/-1 (it overflows).
        if (b == 0 || (b == -1 && a == std::numeric_limits<int64_t>::min())) return false;
        a = in.code == kDiv ? a / b : a % b;
        break;
      case kEq: a = a == b; break;
      case kNe: a = a != b; break;
      case kLt: a = a < b; break;
      case kLe: a = a <= b; break;
      case kGt: a = a > b; break;
      case kGe: a = a >= b; break;
      default: FLEETSIM_CHECK(false && "bad expression opcode");
    }
  }
  FLEETSIM_CHECK(sp == 1);
  *out = st[0];
  return true;
}

namespace {

// A value of partial evaluation: known, or any value at all.
struct Partial {
  int64_t v = 0;
  bool known = false;
};

// A binary operator over partial values; false if it may have no value (a
// division that is by zero or overflows for some value of an unknown side).
bool partial_binary(uint8_t code, Partial b, Partial* a) {
  if (a->known && b.known) {
    const auto ua = static_cast<uint64_t>(a->v), ub = static_cast<uint64_t>(b.v);
    switch (code) {
      case kAdd: a->v = wrap(ua + ub); return true;
      case kSub: a->v = wrap(ua - ub); return true;
      case kMul: a->v = wrap(ua * ub); return true;
      case kDiv:
      case kMod:
        if (b.v == 0 || (b.v == -1 && a->v == std::numeric_limits<int64_t>::min())) return false;
        a->v = code == kDiv ? a->v / b.v : a->v % b.v;
        return true;
      case kEq: a->v = a->v == b.v; return true;
      case kNe: a->v = a->v != b.v; return true;
      case kLt: a->v = a->v < b.v; return true;
      case kLe: a->v = a->v <= b.v; return true;
      case kGt: a->v = a->v > b.v; return true;
      case kGe: a->v = a->v >= b.v; return true;
      default: FLEETSIM_CHECK(false && "bad expression opcode");
    }
  }
  if (code == kDiv || code == kMod) {  // an unknown divisor may be 0; an unknown dividend INT64_MIN
    if (!b.known || b.v == 0 || b.v == -1) return false;
    if (code == kMod && (b.v == 1)) {  // x % 1 == 0 for every x
      *a = Partial{0, true};
      return true;
    }
  }
  if (code == kMul && ((a->known && a->v == 0) || (b.known && b.v == 0))) {
    *a = Partial{0, true};
    return true;
  }
  *a = Partial{};
  return true;
}

}  // namespace

// The stack machine of run() over partial values. An && or || whose left side
// is unknown evaluates its right side and is decided only when that decides it
// (0 for &&, non-zero for ||): `pending` holds such operators until their end.
bool Expr::eval_partial(const VarValues& vars, uint32_t known, int64_t* out) const {
  struct Pending {
    size_t target;
    bool is_and;
  };
  std::array<Partial, kMaxStack + 1> st;
  std::array<Pending, kMaxStack + kMaxNesting + 8> pending;  // one per open && or || at most
  size_t sp = 0, np = 0;
  size_t pc = 0;
  for (;;) {
    for (; np > 0 && pending[np - 1].target == pc; --np) {
      Partial& top = st[sp - 1];
      const bool decides = top.known && (pending[np - 1].is_and ? top.v == 0 : top.v != 0);
      if (!decides) top = Partial{};
    }
    if (pc >= code_.size()) break;
    const Instr& in = code_[pc++];
    if (in.code == kPush) { st[sp++] = Partial{in.value, true}; continue; }
    if (in.code == kLoad) {
      const auto i = static_cast<size_t>(in.value);
      st[sp++] = Partial{vars[i], ((known >> i) & 1u) != 0};
      continue;
    }
    Partial& top = st[sp - 1];
    switch (in.code) {
      case kNot: top.v = top.v == 0 ? 1 : 0; continue;
      case kNeg: top.v = wrap(0 - static_cast<uint64_t>(top.v)); continue;
      case kToBool: top.v = top.v != 0 ? 1 : 0; continue;
      case kAndJump:
      case kOrJump: {
        const bool is_and = in.code == kAndJump;
        if (!top.known) {
          FLEETSIM_CHECK(np < pending.size());
          pending[np++] = Pending{static_cast<size_t>(in.value), is_and};
          --sp;
        } else if ((top.v == 0) == is_and) {  // decided by the left side
          top.v = is_and ? 0 : 1;
          pc = static_cast<size_t>(in.value);
        } else {
          --sp;
        }
        continue;
      }
      default: break;
    }
    const Partial b = st[--sp];
    if (!partial_binary(in.code, b, &st[sp - 1])) return false;
  }
  FLEETSIM_CHECK(sp == 1);
  if (!st[0].known) return false;
  *out = st[0].v;
  return true;
}

bool Expr::uses(Var v) const { return (vars_used_ >> static_cast<unsigned>(v)) & 1u; }

}  // namespace fleetsim
