#include "valijson_audit.hpp"

#include "date_format.hpp"
#include "schema_documents.hpp"

#include <valijson/constraints/concrete_constraints.hpp>
#include <valijson/subschema.hpp>

#include <map>
#include <set>
#include <string>

namespace switchboard::protocol::detail {

namespace {

namespace vc = valijson::constraints;
using valijson::Subschema;

class auditor {
 public:
  void walk(const std::vector<const Subschema*>& roots) {
    for (const auto* root : roots) reach(root);
    while (!work_.empty()) {
      const Subschema* next = work_.back();
      work_.pop_back();
      valijson::Subschema::ApplyFunction inspect = [&](const vc::Constraint& c) {
        constraint(next, c);
        return true;
      };
      next->apply(inspect);
    }
  }

  // Depth-first over same-value edges; reaching a grey subschema again
  // closes a cycle.
  void check_cycles() const {
    std::map<const Subschema*, int> color;  // absent: white, 1: grey, 2: black
    std::vector<std::pair<const Subschema*, std::size_t>> stack;
    for (const auto& [start, edges] : same_value_) {
      if (color.contains(start)) continue;
      color[start] = 1;
      stack.emplace_back(start, 0);
      while (!stack.empty()) {
        auto& [node, edge] = stack.back();
        const auto found = same_value_.find(node);
        const std::size_t count = found == same_value_.end() ? 0 : found->second.size();
        if (edge == count) {
          color[node] = 2;
          stack.pop_back();
          continue;
        }
        const Subschema* next = found->second[edge++];
        const int c = color.contains(next) ? color.at(next) : 0;
        if (c == 1) {
          throw schema_refusal("its subschemas apply each other to the same value in a cycle "
                               "(through $ref, allOf, anyOf, oneOf, not, if or dependencies), "
                               "so validation would never end");
        }
        if (c == 0) {
          color[next] = 1;
          stack.emplace_back(next, 0);
        }
      }
    }
  }

 private:
  void reach(const Subschema* s) {
    if (s && seen_.insert(s).second) work_.push_back(s);
  }

  void same_value(const Subschema* from, const Subschema* to) {
    if (!to) return;
    same_value_[from].push_back(to);
    reach(to);
  }

  [[noreturn]] static void unprepared(const std::string& what) {
    throw schema_refusal(what + " reached valijson at a place where the schema preparation expected "
                         "no schema (a $ref into enum, const, default or examples?); refused, as "
                         "valijson would run std::regex on it");
  }

  void constraint(const Subschema* owner, const vc::Constraint& c) {
    auto list = [&](const auto& combinator) {
      combinator.applyToSubschemas([&](unsigned, const Subschema* s) {
        same_value(owner, s);
        return true;
      });
    };
    if (dynamic_cast<const vc::PatternConstraint*>(&c)) unprepared("a 'pattern'");
    if (const auto* f = dynamic_cast<const vc::FormatConstraint*>(&c)) {
      if (date_format_named(f->getFormat()) != date_format::none) unprepared("format '" + f->getFormat() + "'");
    } else if (const auto* p = dynamic_cast<const vc::PropertiesConstraint*>(&c)) {
      properties(*p);
    } else if (const auto* all = dynamic_cast<const vc::AllOfConstraint*>(&c)) {
      list(*all);
    } else if (const auto* any = dynamic_cast<const vc::AnyOfConstraint*>(&c)) {
      list(*any);
    } else if (const auto* one = dynamic_cast<const vc::OneOfConstraint*>(&c)) {
      list(*one);
    } else if (const auto* n = dynamic_cast<const vc::NotConstraint*>(&c)) {
      same_value(owner, n->getSubschema());
    } else if (const auto* cond = dynamic_cast<const vc::ConditionalConstraint*>(&c)) {
      same_value(owner, cond->getIfSubschema());
      same_value(owner, cond->getThenSubschema());
      same_value(owner, cond->getElseSubschema());
    } else if (const auto* deps = dynamic_cast<const vc::DependenciesConstraint*>(&c)) {
      deps->applyToSchemaDependencies([&](const auto&, const Subschema* s) {
        same_value(owner, s);
        return true;
      });
    } else {
      descendants(c);
    }
  }

  void properties(const vc::PropertiesConstraint& p) {
    bool has_patterns = false;
    p.applyToPatternProperties([&](const auto&, const Subschema*) {
      has_patterns = true;
      return false;
    });
    if (has_patterns) unprepared("'patternProperties'");
    p.applyToProperties([&](const auto&, const Subschema* s) {
      reach(s);
      return true;
    });
    reach(p.getAdditionalPropertiesSubschema());
  }

  // Subschemas applied to parts of the value (items, members, names).
  void descendants(const vc::Constraint& c) {
    if (const auto* contains = dynamic_cast<const vc::ContainsConstraint*>(&c)) {
      reach(contains->getSubschema());
    } else if (const auto* names = dynamic_cast<const vc::PropertyNamesConstraint*>(&c)) {
      reach(names->getSubschema());
    } else if (const auto* items = dynamic_cast<const vc::SingularItemsConstraint*>(&c)) {
      reach(items->getItemsSubschema());
    } else if (const auto* tuple = dynamic_cast<const vc::LinearItemsConstraint*>(&c)) {
      tuple->applyToItemSubschemas([&](unsigned, const Subschema* s) {
        reach(s);
        return true;
      });
      reach(tuple->getAdditionalItemsSubschema());
    }
  }

  std::set<const Subschema*> seen_;
  std::vector<const Subschema*> work_;
  std::map<const Subschema*, std::vector<const Subschema*>> same_value_;
};

}  // namespace

void audit_loaded_schema(const std::vector<const valijson::Subschema*>& roots) {
  auditor a;
  a.walk(roots);
  a.check_cycles();
}

}  // namespace switchboard::protocol::detail
