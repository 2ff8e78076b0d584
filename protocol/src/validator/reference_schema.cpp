// Loading happens in rounds: the main document, then one extra document per
// round whose root is {"anyOf": [{"$ref": <each subschema of a
// patternProperties group>}]}, so valijson loads those subschemas (with
// their own $refs resolved in the right document) and we read the loaded
// subschemas back from the anyOf. A round can reach remote documents with
// groups of their own; the rounds end when no group is left without its
// subschemas.
#include "reference_schema.hpp"

#include "reference_document.hpp"
#include "valijson_audit.hpp"

#include <boost/json/serialize.hpp>

#include <valijson/adapters/boost_json_adapter.hpp>
#include <valijson/constraint_builder.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validation_visitor.hpp>
#include <valijson/validator.hpp>

#include <map>
#include <new>
#include <stdexcept>

namespace switchboard::protocol::detail {

namespace json = boost::json;
namespace vc = valijson::constraints;
using valijson::adapters::Adapter;
using valijson::adapters::BoostJsonAdapter;

// A patternProperties group's subschemas as valijson loaded them.
struct group_subschemas {
  std::vector<const valijson::Subschema*> patterns;  // parallel to property_group::patterns
  const valijson::Subschema* additional = nullptr;
};

struct reference_schema::state {
  keyword_table table;
  std::vector<group_subschemas> groups;  // parallel to table.groups
  valijson::Schema main;
  std::vector<std::unique_ptr<valijson::Schema>> group_rounds;
};

namespace {

constexpr std::string_view children_keyword = "$switchboard:children";

std::string quoted(const std::string& text) { return json::serialize(json::value(text)); }

// Our constraints are copied into valijson's schema (clone()): plain copies.
template <typename Derived>
class copyable_constraint : public vc::PolyConstraint {
 private:
  vc::Constraint* cloneInto(void* where) const override {
    return new (where) Derived(static_cast<const Derived&>(*this));
  }
  size_t sizeOf() const override { return sizeof(Derived); }
};

class pattern_constraint : public copyable_constraint<pattern_constraint> {
 public:
  explicit pattern_constraint(std::shared_ptr<const ecma_regex> regex) : regex_(std::move(regex)) {}

  bool validate(const Adapter& target, const std::vector<std::string>& context,
                valijson::ValidationResults* results) const override {
    if (!target.isString()) return true;  // strict types, as compiled_schema validates
    if (regex_->search(target.asString())) return true;
    if (results) results->pushError(context, "Failed to match regex specified by 'pattern' constraint.");
    return false;
  }

 private:
  std::shared_ptr<const ecma_regex> regex_;
};

class format_constraint : public copyable_constraint<format_constraint> {
 public:
  explicit format_constraint(date_format format) : format_(format) {}

  bool validate(const Adapter& target, const std::vector<std::string>& context,
                valijson::ValidationResults* results) const override {
    // valijson's FormatConstraint reads every value as a string this way.
    if (matches(format_, target.asString())) return true;
    if (results) results->pushError(context, "String should be a valid " + std::string(name_of(format_)));
    return false;
  }

 private:
  date_format format_;
};

// valijson's PropertiesConstraint minus "properties" (which valijson still
// applies): patterns, then additionalProperties for members no name and no
// pattern matched, with valijson's messages.
class group_constraint : public copyable_constraint<group_constraint> {
 public:
  group_constraint(const reference_schema::state& owner, std::size_t index) : owner_(&owner), index_(index) {}

  bool validate(const Adapter& target, const std::vector<std::string>& context,
                valijson::ValidationResults* results) const override {
    if (!target.isObject()) return true;  // strict types
    const auto* object_adapter = dynamic_cast<const BoostJsonAdapter*>(&target);
    if (!object_adapter) {  // only a BoostJsonAdapter holds objects here; never pass what we cannot check
      throw std::logic_error("patternProperties applied to an object of an unknown adapter");
    }
    const auto object = object_adapter->asObject();
    const property_group& group = owner_->table.groups[index_];
    const group_subschemas& loaded = owner_->groups[index_];
    std::set<std::string> matched;
    bool valid = true;
    for (std::size_t i = 0; i < group.patterns.size(); ++i) {
      const schema_pattern& pattern = owner_->table.patterns[group.patterns[i].pattern];
      for (const auto& member : object) {
        if (!pattern.regex->search(member.first)) continue;
        matched.insert(member.first);
        if (apply(*loaded.patterns[i], member, context, results)) continue;
        if (!results) return false;
        results->pushError(context, "Failed to validate against schema associated with pattern '" +
                                        pattern.text + "'.");
        valid = false;
      }
    }
    for (const auto& member : object) {
      if (group.property_names.contains(member.first) || matched.contains(member.first)) continue;
      if (!additional(group, loaded, member, context, results)) {
        if (!results) return false;
        valid = false;
      }
    }
    return valid;
  }

 private:
  template <typename Member>
  static bool additional(const property_group& group, const group_subschemas& loaded, const Member& member,
                         const std::vector<std::string>& context, valijson::ValidationResults* results) {
    if (group.additional == property_group::extra::any) return true;
    if (group.additional == property_group::extra::none) {
      if (results) {
        results->pushError(context, "Object contains a property that could not be validated using "
                                    "'properties' or 'additionalProperties' constraints: '" +
                                        member.first + "'.");
      }
      return false;
    }
    if (apply(*loaded.additional, member, context, results)) return true;
    if (results) results->pushError(context, "Failed to validate against additional properties schema");
    return false;
  }

  template <typename Member>
  static bool apply(const valijson::Subschema& schema, const Member& member,
                    const std::vector<std::string>& context, valijson::ValidationResults* results) {
    std::vector<std::string> member_context = context;
    member_context.push_back("[" + member.first + "]");
    std::unordered_map<std::string, std::regex> no_regexes;  // nothing we load uses it
    valijson::ValidationVisitor<BoostJsonAdapter> visitor(member.second, std::move(member_context), true,
                                                          results, no_regexes);
    return visitor.validateSchema(schema);
  }

  const reference_schema::state* owner_;
  std::size_t index_;
};

// The index one of our keywords holds; schema_refusal when it is not one
// (only our rewrite writes these keywords; a schema's own are refused).
std::size_t index_in(const Adapter& node, std::size_t size, std::string_view keyword) {
  if (node.maybeInteger()) {
    const auto index = node.asInteger();
    if (index >= 0 && static_cast<std::size_t>(index) < size) return static_cast<std::size_t>(index);
  }
  throw schema_refusal("keyword '" + std::string(keyword) + "' holds no index of ours");
}

void require_usable(const schema_pattern& pattern) {
  if (!pattern.regex) {
    throw schema_refusal("pattern " + quoted(pattern.text) + " at " + pattern.location +
                         " cannot be used: " + pattern.why_not);
  }
}

class pattern_builder : public valijson::ConstraintBuilder {
 public:
  explicit pattern_builder(const keyword_table& table) : table_(table) {}
  vc::Constraint* make(const Adapter& node) const override {
    const auto& pattern = table_.patterns[index_in(node, table_.patterns.size(), pattern_keyword)];
    require_usable(pattern);
    return new pattern_constraint(pattern.regex);
  }

 private:
  const keyword_table& table_;
};

class format_builder : public valijson::ConstraintBuilder {
 public:
  vc::Constraint* make(const Adapter& node) const override {
    const auto format = static_cast<date_format>(index_in(node, 4, format_keyword));
    if (format == date_format::none) throw schema_refusal("keyword 'format' holds no format of ours");
    return new format_constraint(format);
  }
};

class group_builder : public valijson::ConstraintBuilder {
 public:
  explicit group_builder(const reference_schema::state& owner) : owner_(owner) {}
  vc::Constraint* make(const Adapter& node) const override {
    const std::size_t index = index_in(node, owner_.table.groups.size(), group_keyword);
    const property_group& group = owner_.table.groups[index];
    if (!group.invalid.empty()) throw schema_refusal(group.invalid);
    for (const auto& child : group.patterns) require_usable(owner_.table.patterns[child.pattern]);
    return new group_constraint(owner_, index);
  }

 private:
  const reference_schema::state& owner_;
};

// One SchemaParser for all rounds, with our keywords and remote documents
// rewritten the first time valijson asks for them.
class loader {
 public:
  loader(reference_schema::state& out, schema_documents& documents, bool remote_refs)
      : out_(out), documents_(documents), remote_refs_(remote_refs) {
    parser_.addConstraintBuilder(std::string(pattern_keyword), new pattern_builder(out.table));
    parser_.addConstraintBuilder(std::string(format_keyword), new format_builder());
    parser_.addConstraintBuilder(std::string(group_keyword), new group_builder(out));
  }

  void load() {
    main_ = prepare_for_valijson(documents_.main(), "", out_.table);
    populate(main_, out_.main);
    for (std::size_t done = 0; done < out_.table.groups.size();) done = load_group_round(done);
    if (out_.table.uses_id && !out_.table.groups.empty()) {
      throw schema_refusal("patternProperties in a schema that changes its base URI with \"id\" is not supported");
    }
    std::vector<const valijson::Subschema*> roots{&out_.main};
    for (const auto& round : out_.group_rounds) roots.push_back(round.get());
    audit_loaded_schema(roots);
  }

 private:
  void populate(const json::value& document, valijson::Schema& into) {
    const BoostJsonAdapter adapter(document);
    if (!remote_refs_) return parser_.populateSchema(adapter, into);
    auto fetch = [this](const std::string& uri) -> const json::value* {
      auto prepared = remote_.find(uri);
      if (prepared == remote_.end()) {
        const json::value* original = documents_.find(uri);
        if (!original) return nullptr;
        prepared = remote_.emplace(uri, prepare_for_valijson(*original, uri, out_.table)).first;
      }
      return new json::value(prepared->second);
    };
    auto release = [](const json::value* document) { delete document; };
    parser_.populateSchema<BoostJsonAdapter>(adapter, into, fetch, release);
  }

  // Loads the subschemas of groups [first, size()) ; returns the new size.
  std::size_t load_group_round(std::size_t first) {
    const std::size_t last = out_.table.groups.size();
    out_.groups.resize(last);
    json::array refs;
    for (std::size_t g = first; g < last; ++g) {
      const property_group& group = out_.table.groups[g];
      for (const auto& child : group.patterns) refs.push_back(json::object{{"$ref", child.ref}});
      if (group.additional == property_group::extra::schema) {
        refs.push_back(json::object{{"$ref", group.additional_ref}});
      }
    }
    if (refs.empty()) return last;  // patterns of {} and additionalProperties true or false
    json::value round = main_.is_object() ? main_ : json::object{};
    round.as_object()[children_keyword] = json::object{{"anyOf", std::move(refs)}};
    round.as_object()["$ref"] = "#/" + std::string(children_keyword);
    auto& schema = *out_.group_rounds.emplace_back(std::make_unique<valijson::Schema>());
    populate(round, schema);
    assign(read_any_of(schema), first, last);
    return last;
  }

  static std::vector<const valijson::Subschema*> read_any_of(const valijson::Schema& schema) {
    std::vector<const valijson::Subschema*> out;
    valijson::Subschema::ApplyFunction read = [&](const vc::Constraint& c) {
      if (const auto* any = dynamic_cast<const vc::AnyOfConstraint*>(&c)) {
        any->applyToSubschemas([&](unsigned, const valijson::Subschema* s) {
          out.push_back(s);
          return true;
        });
      }
      return true;
    };
    schema.apply(read);
    return out;
  }

  void assign(const std::vector<const valijson::Subschema*>& loaded, std::size_t first, std::size_t last) {
    std::size_t next = 0;
    auto take = [&]() {
      if (next >= loaded.size()) throw schema_refusal("valijson did not load every patternProperties subschema");
      return loaded[next++];
    };
    for (std::size_t g = first; g < last; ++g) {
      const property_group& group = out_.table.groups[g];
      for (std::size_t i = 0; i < group.patterns.size(); ++i) out_.groups[g].patterns.push_back(take());
      if (group.additional == property_group::extra::schema) out_.groups[g].additional = take();
    }
  }

  reference_schema::state& out_;
  schema_documents& documents_;
  bool remote_refs_;
  valijson::SchemaParser parser_{valijson::SchemaParser::kDraft7};
  json::value main_;
  std::map<std::string, json::value> remote_;
};

}  // namespace

reference_schema::reference_schema(std::unique_ptr<state> loaded) : state_(std::move(loaded)) {}

reference_schema::~reference_schema() = default;

std::unique_ptr<const reference_schema> reference_schema::compile(schema_documents& documents, bool remote_refs) {
  auto loaded = std::make_unique<state>();
  loader(*loaded, documents, remote_refs).load();
  return std::unique_ptr<const reference_schema>(new reference_schema(std::move(loaded)));
}

bool reference_schema::validate(const json::value& value, valijson::ValidationResults* results) const {
  // Strict types; the Validator's std::regex cache stays empty, as no
  // pattern constraint of valijson's own is ever loaded.
  valijson::Validator validator;
  return validator.validate(state_->main, BoostJsonAdapter(value), results);
}

}  // namespace switchboard::protocol::detail
