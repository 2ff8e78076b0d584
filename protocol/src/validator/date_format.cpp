// One pass over the text, no backtracking: every alternative of valijson's
// regexes starts with a different character, so the first character decides.
#include "date_format.hpp"

namespace switchboard::protocol::detail {

namespace {

class cursor {
 public:
  explicit cursor(std::string_view text) : text_(text) {}

  bool done() const noexcept { return pos_ == text_.size(); }
  char peek() const noexcept { return done() ? '\0' : text_[pos_]; }

  bool take(char c) noexcept {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }

  bool take_any_of(std::string_view set) noexcept {
    if (done() || set.find(text_[pos_]) == std::string_view::npos) return false;
    ++pos_;
    return true;
  }

  // One digit in [lo, hi]; its value, or -1.
  int digit(char lo = '0', char hi = '9') noexcept {
    const char c = peek();
    if (c < lo || c > hi) return -1;
    ++pos_;
    return c - '0';
  }

  // [0-9]+
  bool digits() noexcept {
    const std::size_t start = pos_;
    while (digit() >= 0) {
    }
    return pos_ > start;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

// Two digits; `first_max` bounds the first, `second_max(first)` the second.
// Returns the value or -1.
template <typename SecondMax>
int two_digits(cursor& in, char first_max, SecondMax second_max) noexcept {
  const int tens = in.digit('0', first_max);
  if (tens < 0) return -1;
  const int ones = in.digit('0', second_max(tens));
  return ones < 0 ? -1 : tens * 10 + ones;
}

// (0[1-9]|1[012])
int month(cursor& in) noexcept {
  const int m = two_digits(in, '1', [](int tens) { return tens == 0 ? '9' : '2'; });
  return m == 0 ? -1 : m;
}

// (0[1-9]|[12][0-9]|3[01])
int day(cursor& in) noexcept {
  const int d = two_digits(in, '3', [](int tens) { return tens == 3 ? '1' : '9'; });
  return d == 0 ? -1 : d;
}

// ([01][0-9]|2[0-3])
bool hour(cursor& in) noexcept {
  return two_digits(in, '2', [](int tens) { return tens == 2 ? '3' : '9'; }) >= 0;
}

// [0-5][0-9]
bool minute(cursor& in) noexcept {
  return two_digits(in, '5', [](int) { return '9'; }) >= 0;
}

// ([0-5][0-9]|60)
bool second(cursor& in) noexcept {
  return two_digits(in, '6', [](int tens) { return tens == 6 ? '0' : '9'; }) >= 0;
}

// valijson's validate_date_range: February has up to 29 days; months 4, 6,
// 9 and 11 up to 30; the others 31.
bool day_in_month(int m, int d) noexcept {
  if (m == 2) return d <= 29;
  const bool thirty = m <= 7 ? m % 2 == 0 : m % 2 != 0;
  return d <= (thirty ? 30 : 31);
}

// ([0-9]+)-month-day, with the day checked against the month.
bool date_part(cursor& in) noexcept {
  if (!in.digits() || !in.take('-')) return false;
  const int m = month(in);
  if (m < 0 || !in.take('-')) return false;
  const int d = day(in);
  return d >= 0 && day_in_month(m, d);
}

// hour:minute:second(\.[0-9]+)?(Z|z|[+|-]hour:minute)
bool time_part(cursor& in) noexcept {
  if (!hour(in) || !in.take(':') || !minute(in) || !in.take(':') || !second(in)) return false;
  if (in.take('.') && !in.digits()) return false;
  if (in.take_any_of("Zz")) return true;
  return in.take_any_of("+|-") && hour(in) && in.take(':') && minute(in);
}

}  // namespace

date_format date_format_named(std::string_view name) noexcept {
  if (name == "date") return date_format::date;
  if (name == "time") return date_format::time;
  if (name == "date-time") return date_format::date_time;
  return date_format::none;
}

std::string_view name_of(date_format format) noexcept {
  switch (format) {
    case date_format::date: return "date";
    case date_format::time: return "time";
    case date_format::date_time: return "date-time";
    case date_format::none: break;
  }
  return "";
}

bool matches(date_format format, std::string_view text) noexcept {
  cursor in(text);
  bool ok = true;
  switch (format) {
    case date_format::date: ok = date_part(in); break;
    case date_format::time: ok = time_part(in); break;
    case date_format::date_time: ok = date_part(in) && in.take_any_of("Tt") && time_part(in); break;
    case date_format::none: return true;
  }
  return ok && in.done();
}

}  // namespace switchboard::protocol::detail
