// A small recursive-descent parser for the `when` language that writes Python.
// Parentheses follow Python's precedence (where `not` binds looser than a
// comparison and comparisons chain), and a logic result used as a number is
// made 0/1 with bool(), so the Python value equals the simulator's.
#include "sim/export/py_expr.h"

#include <cctype>
#include <vector>

namespace fleetsim::exporter {

namespace {

// Python precedence levels, loosest first.
enum Prec { kOr = 1, kAnd, kNot, kCmp, kAdd, kMul, kNeg, kAtom };

struct Py {
  std::string text;
  int prec = kAtom;
};

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Result<std::string> run() {
    Py e = parse_or();
    skip();
    if (!error_.empty() || pos_ != s_.size()) {
      Diagnostic d;
      d.loc.col = static_cast<int>(pos_) + 1;
      d.message = error_.empty() ? "unexpected text in `when` expression" : error_;
      return d;
    }
    if (!signed_) return e.text;
    // C's truncating division where operands may be negative.
    return Parser(s_, true).run_signed();
  }

 private:
  Parser(std::string_view s, bool c_div) : s_(s), c_div_(c_div) {}
  Result<std::string> run_signed() { return parse_or().text; }

  std::string_view s_;
  size_t pos_ = 0;
  bool c_div_ = false;   // write _c_div/_c_mod
  bool signed_ = false;  // a subtraction or negation was seen
  std::string error_;

  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool take(std::string_view tok) {
    skip();
    if (s_.substr(pos_, tok.size()) != tok) return false;
    // "!" must not take the first half of "!=", "<" of "<=", ...
    if (tok.size() == 1 && pos_ + 1 < s_.size() && s_[pos_ + 1] == '=' && tok != "=") return false;
    pos_ += tok.size();
    return true;
  }
  static Py wrap(const Py& p, int need) { return p.prec >= need ? p : Py{"(" + p.text + ")", kAtom}; }
  // A logic value used as a number: Python's `and`/`or` yield an operand, not 0/1.
  static Py as_number(const Py& p) { return p.prec <= kAnd ? Py{"bool(" + p.text + ")", kAtom} : p; }

  Py binary(const Py& a, const char* op, const Py& b, int prec) {
    const bool numeric = prec >= kCmp;
    const Py l = numeric ? as_number(a) : a, r = numeric ? as_number(b) : b;
    // Comparisons chain in Python: compare a comparison's value in parentheses.
    const int need_l = prec == kCmp ? kCmp + 1 : prec, need_r = prec + 1;
    return {wrap(l, need_l).text + " " + op + " " + wrap(r, need_r).text, prec};
  }

  Py parse_or() {
    Py a = parse_and();
    while (take("||")) a = binary(a, "or", parse_and(), kOr);
    return a;
  }
  Py parse_and() {
    Py a = parse_eq();
    while (take("&&")) a = binary(a, "and", parse_eq(), kAnd);
    return a;
  }
  Py parse_eq() {
    Py a = parse_rel();
    for (;;) {
      if (take("==")) a = binary(a, "==", parse_rel(), kCmp);
      else if (take("!=")) a = binary(a, "!=", parse_rel(), kCmp);
      else return a;
    }
  }
  Py parse_rel() {
    Py a = parse_add();
    for (;;) {
      if (take("<=")) a = binary(a, "<=", parse_add(), kCmp);
      else if (take(">=")) a = binary(a, ">=", parse_add(), kCmp);
      else if (take("<")) a = binary(a, "<", parse_add(), kCmp);
      else if (take(">")) a = binary(a, ">", parse_add(), kCmp);
      else return a;
    }
  }
  Py parse_add() {
    Py a = parse_mul();
    for (;;) {
      if (take("+")) a = binary(a, "+", parse_mul(), kAdd);
      else if (take("-")) { signed_ = true; a = binary(a, "-", parse_mul(), kAdd); }
      else return a;
    }
  }
  Py parse_mul() {
    Py a = parse_unary();
    for (;;) {
      const char* op = take("*") ? "*" : take("/") ? "/" : take("%") ? "%" : nullptr;
      if (!op) return a;
      Py b = parse_unary();
      if (op[0] == '*') {
        a = binary(a, "*", b, kMul);
      } else if (c_div_) {
        a = {std::string(op[0] == '/' ? "_c_div(" : "_c_mod(") + as_number(a).text + ", " + as_number(b).text + ")",
             kAtom};
      } else {
        a = binary(a, op[0] == '/' ? "//" : "%", b, kMul);
      }
    }
  }
  Py parse_unary() {
    if (take("!")) return {"not " + wrap(parse_unary(), kNot).text, kNot};
    if (take("-")) {
      signed_ = true;
      return {"-" + wrap(as_number(parse_unary()), kNeg).text, kNeg};
    }
    return parse_atom();
  }
  Py parse_atom() {
    skip();
    if (take("(")) {
      Py e = parse_or();
      if (!take(")") && error_.empty()) error_ = "expected ')'";
      return e;
    }
    const size_t start = pos_;
    if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    } else {
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    }
    if (pos_ == start) {
      if (error_.empty()) error_ = "expected a number, a variable or '('";
      return {"0", kAtom};
    }
    return {std::string(s_.substr(start, pos_ - start)), kAtom};
  }
};

}  // namespace

Result<std::string> when_to_python(std::string_view text) { return Parser(text).run(); }

}  // namespace fleetsim::exporter
