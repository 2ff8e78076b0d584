// Stage 3 of the structured-output parser: the two repairs that are safe
// because they add no content — dropping trailing commas, and closing an
// answer that ends inside a value after cutting it back to its last complete
// member (a cut-off string, number, literal or key is dropped, never completed).
#include "stages.hpp"

#include <cctype>

namespace switchboard::protocol::detail {

namespace {

enum class expect { key_or_end, key, colon, value_or_end, value, comma_or_end };

struct frame {
  char closer;       // '}' or ']'
  expect state;
  std::size_t safe;  // output length after the last complete member/element
  std::size_t key_offset = 0;  // raw offset of the key being read
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
}

class repairer {
 public:
  repairer(std::string_view text, std::size_t offset) : text_(text), offset_(offset) {}

  repair_outcome run() {
    while (i_ < text_.size() && !failed_) {
      if (done_ && stack_.empty()) {
        skip_trailing_text();
        break;
      }
      step();
    }
    const bool cut_off = !failed_ && !stack_.empty();
    if (!failed_) finish_truncated();
    return {std::move(out_), std::move(repairs_), cut_off};
  }

 private:
  std::string raw_offset(std::size_t i) const { return std::to_string(offset_ + i); }

  void note(std::string text) { repairs_.push_back(std::move(text)); }

  // Not a shape repair can fix: keep the rest verbatim and let the JSON
  // parser report where it breaks.
  void give_up() {
    out_.append(text_.substr(i_));
    i_ = text_.size();
    failed_ = true;
  }

  bool expecting_value() const {
    if (stack_.empty()) return !done_;
    const expect s = stack_.back().state;
    return s == expect::value || s == expect::value_or_end;
  }

  void value_complete() {
    if (stack_.empty()) {
      done_ = true;
      return;
    }
    stack_.back().state = expect::comma_or_end;
    stack_.back().safe = out_.size();
  }

  void step() {
    const char c = text_[i_];
    if (is_space(c)) {
      out_ += c;
      ++i_;
    } else if (c == '"') {
      read_string();
    } else if (c == '{' || c == '[') {
      open(c);
    } else if (c == '}' || c == ']') {
      close(c);
    } else if (c == ',') {
      comma();
    } else if (c == ':') {
      colon();
    } else if (is_token_char(c)) {
      token();
    } else {
      give_up();
    }
  }

  void open(char c) {
    if (!expecting_value()) return give_up();
    out_ += c;
    ++i_;
    const bool object = c == '{';
    stack_.push_back({object ? '}' : ']', object ? expect::key_or_end : expect::value_or_end,
                      out_.size()});
  }

  void close(char c) {
    if (stack_.empty() || stack_.back().closer != c) return give_up();
    const expect s = stack_.back().state;
    if (s != expect::comma_or_end && s != expect::key_or_end && s != expect::value_or_end) {
      return give_up();
    }
    out_ += c;
    ++i_;
    stack_.pop_back();
    value_complete();
  }

  void comma() {
    if (stack_.empty() || stack_.back().state != expect::comma_or_end) return give_up();
    std::size_t next = i_ + 1;
    while (next < text_.size() && is_space(text_[next])) ++next;
    if (next < text_.size() && (text_[next] == '}' || text_[next] == ']')) {
      note("removed trailing comma at offset " + raw_offset(i_));
      ++i_;
      return;
    }
    if (next == text_.size()) {
      note("removed dangling comma at end of output (offset " + raw_offset(i_) + ")");
      i_ = next;
      return;
    }
    out_ += ',';
    ++i_;
    auto& top = stack_.back();
    top.state = top.closer == '}' ? expect::key : expect::value;
  }

  void colon() {
    if (stack_.empty() || stack_.back().state != expect::colon) return give_up();
    out_ += ':';
    ++i_;
    stack_.back().state = expect::value;
  }

  void token() {
    if (!expecting_value()) return give_up();
    std::size_t end = i_;
    while (end < text_.size() && is_token_char(text_[end])) ++end;
    const std::string_view tok = text_.substr(i_, end - i_);
    const bool complete_literal = tok == "true" || tok == "false" || tok == "null";
    if (end == text_.size() && !complete_literal && !stack_.empty()) {
      // "12" at the very end may be the start of "1234"; "tru" of "true".
      // Completing either would be a guess, so the member goes.
      note("dropped value '" + std::string(tok) + "' cut off at end of output (offset " +
           raw_offset(i_) + ")");
      cut_back_member();
      i_ = end;
      return;
    }
    out_.append(tok);
    i_ = end;
    value_complete();
  }

  void read_string() {
    const bool is_key = !stack_.empty() && (stack_.back().state == expect::key ||
                                            stack_.back().state == expect::key_or_end);
    if (!is_key && !expecting_value()) return give_up();
    const std::size_t start = i_;
    std::size_t j = i_ + 1;
    while (j < text_.size()) {
      const char c = text_[j];
      if (c == '"') break;
      if (c == '\\') {
        const std::size_t escape_length =
            (j + 1 < text_.size() && text_[j + 1] == 'u') ? 6 : 2;
        if (j + escape_length > text_.size()) {
          j = text_.size();
          break;
        }
        j += escape_length;
      } else {
        ++j;
      }
    }
    if (j < text_.size()) {  // closed normally
      out_.append(text_.substr(start, j + 1 - start));
      i_ = j + 1;
      if (is_key) {
        stack_.back().state = expect::colon;
        stack_.back().key_offset = start;
      } else {
        value_complete();
      }
      return;
    }
    i_ = text_.size();
    if (is_key) {
      note("dropped key cut off at end of output (offset " + raw_offset(start) + ")");
      cut_back_member();
      return;
    }
    // A string cut off at the end cannot be repaired: closing it would
    // present a fragment ("Maya and L") as the whole value.
    if (stack_.empty()) return give_up();
    note("dropped string cut off at end of output (offset " + raw_offset(start) + ")");
    cut_back_member();
  }

  void cut_back_member() {
    if (stack_.empty()) return;
    out_.resize(stack_.back().safe);
    stack_.back().state = expect::comma_or_end;
  }

  void skip_trailing_text() {
    std::size_t j = i_;
    while (j < text_.size() && is_space(text_[j])) ++j;
    if (j < text_.size()) {
      note("ignored text after the JSON value (offset " + raw_offset(j) + ")");
    }
    i_ = text_.size();
  }

  void finish_truncated() {
    if (stack_.empty()) return;
    const expect s = stack_.back().state;
    if (s == expect::colon || s == expect::value) {
      if (stack_.back().closer == '}') {
        note("dropped key at offset " + raw_offset(stack_.back().key_offset) +
             " whose value is missing at end of output");
      }
      cut_back_member();
    }
    std::string closers;
    for (auto it = stack_.rbegin(); it != stack_.rend(); ++it) closers += it->closer;
    out_ += closers;
    note("closed " + std::to_string(closers.size()) + " unclosed bracket" +
         (closers.size() == 1 ? "" : "s") + " at end of output: " + closers);
    stack_.clear();
  }

  std::string_view text_;
  std::size_t offset_;
  std::size_t i_ = 0;
  std::string out_;
  std::vector<frame> stack_;
  std::vector<std::string> repairs_;
  bool done_ = false;
  bool failed_ = false;
};

}  // namespace

repair_outcome repair_json(std::string_view text, std::size_t offset) {
  return repairer(text, offset).run();
}

}  // namespace switchboard::protocol::detail
