// The `format` values valijson checks (date, time, date-time), as small
// hand-written parsers instead of valijson's std::regex, which overflows the
// stack on a long run of digits. Internal.
//
// They accept exactly what valijson (Debian 12 libvalijson-dev) accepts:
//   date       ^([0-9]+)-(0[1-9]|1[012])-(0[1-9]|[12][0-9]|3[01])$
//   time       ^([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9]|60)(\.[0-9]+)?
//              (([Zz])|([\+|\-]([01][0-9]|2[0-3]):[0-5][0-9]))$
//   date-time  the date, [Tt], the time
// plus valijson's day-of-month check (February up to 29, 30-day months up
// to 30), quirks included: any number of year digits, '|' as an offset sign.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace switchboard::protocol::detail {

enum class date_format : std::uint8_t { none, date, time, date_time };

// date_format::none for every other format name (those are annotations).
date_format date_format_named(std::string_view name) noexcept;

std::string_view name_of(date_format format) noexcept;

bool matches(date_format format, std::string_view text) noexcept;

}  // namespace switchboard::protocol::detail
