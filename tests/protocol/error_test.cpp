#include <switchboard/protocol/error.hpp>

#include <gtest/gtest.h>

namespace sp = switchboard::protocol;

TEST(ProtocolError, ReasonCodesAreStableStrings) {
  EXPECT_EQ(sp::to_string(sp::errc::invalid_json), "invalid_json");
  EXPECT_EQ(sp::to_string(sp::errc::schema_missing_field), "schema_missing_field");
  EXPECT_EQ(sp::to_string(sp::errc::empty_output), "empty_output");
}

TEST(ProtocolError, ConvertsToErrorCodeInItsCategory) {
  boost::system::error_code ec = sp::errc::schema_type_error;
  EXPECT_EQ(ec.category().name(), std::string("switchboard.protocol"));
  EXPECT_EQ(ec.message(), "schema_type_error");
  EXPECT_TRUE(ec == sp::errc::schema_type_error);
  EXPECT_FALSE(ec == sp::errc::schema_violation);
}
