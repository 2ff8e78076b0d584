// How the catalog's records are written: as JSON objects in the journal
// (to_json, *_from: every field by name, what an older writer left out
// filled in with its default), and in the form kept in memory
// (kept_form, unpack_*: see kept_record).
#pragma once

#include "catalog.hpp"

#include <boost/json/object.hpp>

#include <cstdint>

namespace switchboard::server {

// A record's "version" (0 when it has none).
std::int64_t version_of(const boost::json::object& record);

boost::json::object to_json(const assistant_record& a);
boost::json::object to_json(const thread_record& t);
boost::json::object to_json(const run_record& r);
assistant_record assistant_from(const boost::json::object& o);
thread_record thread_from(const boost::json::object& o);
run_record run_from(const boost::json::object& o);

// `record` (to_json() of a thread or run, or one read from the journal) in
// the form the catalog keeps; its values text not shared yet
// (catalog::share_values).
kept_record kept_form(boost::json::object record, bool is_run);
kept_record kept(const thread_record& t);
kept_record kept(const run_record& r);
// The record `id` again from its kept form.
thread_record unpack_thread(const kept_record& k, const std::string& id);
run_record unpack_run(const kept_record& k, const std::string& id);

}  // namespace switchboard::server
