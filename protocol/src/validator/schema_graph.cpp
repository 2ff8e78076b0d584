// The walk mirrors valijson's SchemaParser (Debian 12 libvalijson-dev):
// resolveThenPopulateSchema for the root's chain of $refs (a relative URI
// stays in the document, the scope is reset), makeOrReuseSchema everywhere
// else (resolveDocumentUri with the "id" scope), populateSchema for which
// keywords hold subschemas. Every node is visited once per (scope, whether
// it is on the root's chain), as valijson keys its cache by scope.
#include "schema_graph.hpp"

#include "../detail/json_pointer.hpp"

#include <valijson/internal/json_pointer.hpp>
#include <valijson/internal/json_reference.hpp>
#include <valijson/internal/uri.hpp>

#include <boost/json/object.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <string_view>
#include <tuple>
#include <vector>

namespace switchboard::protocol::detail {

namespace json = boost::json;

namespace {

using scope_type = std::optional<std::string>;

struct graph_node {
  const json::value* document;  // the root of the document it sits in
  std::string uri;              // of that document, "" for the main one
  const json::value* schema;
  scope_type scope;             // valijson's resolution scope ("id")
  bool root_chain = false;      // on the root's chain of $refs
  std::string pointer;          // where it is, for messages
  std::vector<std::size_t> same_value;  // subschemas applied to the same value
};

// Only called on strings no longer than max_ref_uri_length: isUrn is a
// std::regex whose recursion grows with the length.
bool absolute_or_urn(const std::string& uri) {
  return valijson::internal::uri::isUriAbsolute(uri) || valijson::internal::uri::isUrn(uri);
}

// SchemaParser::resolveDocumentUri.
scope_type resolve_document_uri(const scope_type& scope, const scope_type& document_uri) {
  if (scope) {
    if (!document_uri) return scope;
    if (absolute_or_urn(*document_uri)) return document_uri;
    return valijson::internal::uri::resolveRelativeUri(*scope, *document_uri);
  }
  if (document_uri && absolute_or_urn(*document_uri)) return document_uri;
  return document_uri;
}

// SchemaParser::sanitiseJsonPointer: no trailing slashes.
std::string sanitise_pointer(const scope_type& pointer) {
  if (!pointer) return "";
  std::string out = *pointer;
  out.erase(out.find_last_not_of('/') + 1);
  return out;
}

bool has_pattern_properties(const json::value& v) {
  const auto* obj = v.if_object();
  const auto* patterns = obj ? obj->if_contains("patternProperties") : nullptr;
  return patterns && patterns->is_object();
}

class graph_builder {
 public:
  explicit graph_builder(schema_documents& documents) : documents_(documents) {}

  void build() {
    const json::value& main = documents_.main();
    add({&main, "", &main, std::nullopt, true, "", {}});
    while (!work_.empty()) {
      const std::size_t next = work_.back();
      work_.pop_back();
      expand(next);
    }
  }

  // Depth-first over same-value edges: a grey node reached again closes a
  // cycle; a finished node knows the longest chain that starts there.
  void check() const {
    enum class color : std::uint8_t { white, grey, black };
    std::vector<color> colors(nodes_.size(), color::white);
    std::vector<std::size_t> chain(nodes_.size(), 0);
    std::vector<std::pair<std::size_t, std::size_t>> stack;  // node, next edge
    for (std::size_t start = 0; start < nodes_.size(); ++start) {
      if (colors[start] != color::white) continue;
      colors[start] = color::grey;
      stack.emplace_back(start, 0);
      while (!stack.empty()) {
        auto& [node, edge] = stack.back();
        const auto& edges = nodes_[node].same_value;
        if (edge < edges.size()) {
          const std::size_t next = edges[edge++];
          if (colors[next] == color::grey) refuse_cycle(stack, next);
          if (colors[next] == color::white) {
            colors[next] = color::grey;
            stack.emplace_back(next, 0);
          }
          continue;
        }
        std::size_t longest = 0;
        for (const std::size_t next : edges) longest = std::max(longest, chain[next]);
        chain[node] = longest + 1;
        if (chain[node] > max_same_value_chain) refuse_chain(node);
        colors[node] = color::black;
        stack.pop_back();
      }
    }
  }

 private:
  std::string location(const graph_node& n) const { return schema_location(n.uri, n.pointer); }

  [[noreturn]] void refuse_cycle(const std::vector<std::pair<std::size_t, std::size_t>>& stack,
                                 std::size_t again) const {
    std::string path;
    bool in_cycle = false;
    for (const auto& [node, edge] : stack) {
      in_cycle = in_cycle || node == again;
      if (in_cycle) path += location(nodes_[node]) + " -> ";
    }
    throw schema_refusal("$ref cycle: " + path + location(nodes_[again]) +
                         " (each applies the next to the same value, so validation would never end)");
  }

  [[noreturn]] void refuse_chain(std::size_t node) const {
    throw schema_refusal("subschemas applied to one value ($ref, allOf, anyOf, oneOf, not, if) nest more than " +
                         std::to_string(max_same_value_chain) + " deep from " + location(nodes_[node]));
  }

  std::size_t add(graph_node node) {
    const auto key = std::make_tuple(node.schema, node.scope, node.root_chain);
    if (const auto it = index_.find(key); it != index_.end()) return it->second;
    const std::size_t id = nodes_.size();
    index_.emplace(key, id);
    nodes_.push_back(std::move(node));
    work_.push_back(id);
    return id;
  }

  void expand(std::size_t id) {
    const graph_node node = nodes_[id];  // a copy: add() may grow nodes_
    const auto* obj = node.schema->if_object();
    if (!obj) return;
    if (const auto* ref = obj->if_contains("$ref")) {
      if (!ref->is_string()) return;  // valijson refuses it while loading
      const std::size_t target = follow(node, std::string(ref->get_string()));
      if (target != no_node) nodes_[id].same_value.push_back(target);
      return;  // valijson ignores the siblings of $ref
    }
    const scope_type scope = scope_of(node, *obj);
    auto child = [&](const json::value& schema, const std::string& pointer, bool same_value) {
      if (!schema.is_object()) return;  // booleans apply nothing further
      const std::size_t target = add({node.document, node.uri, &schema, scope, false, pointer, {}});
      if (same_value) nodes_[id].same_value.push_back(target);
    };
    keyword_children(*obj, node.pointer, child);
  }

  // Calls child(schema, pointer, applies_to_same_value) for every subschema
  // valijson's populateSchema parses under `obj`.
  template <typename Child>
  static void keyword_children(const json::object& obj, const std::string& at, Child&& child) {
    auto one = [&](std::string_view keyword, bool same_value) {
      if (const auto* s = obj.if_contains(keyword)) child(*s, append_pointer(at, keyword), same_value);
    };
    auto list = [&](std::string_view keyword, bool same_value) {
      const auto* v = obj.if_contains(keyword);
      if (!v || !v->is_array()) return;
      const std::string base = append_pointer(at, keyword);
      for (std::size_t i = 0; i < v->get_array().size(); ++i) {
        child(v->get_array()[i], append_pointer(base, std::to_string(i)), same_value);
      }
    };
    auto map = [&](std::string_view keyword, bool same_value) {
      const auto* v = obj.if_contains(keyword);
      if (!v || !v->is_object()) return;
      const std::string base = append_pointer(at, keyword);
      for (const auto& [name, s] : v->get_object()) child(s, append_pointer(base, name), same_value);
    };
    for (const auto keyword : {"allOf", "anyOf", "oneOf"}) list(keyword, true);
    one("not", true);
    if (obj.contains("if")) {
      for (const auto keyword : {"if", "then", "else"}) one(keyword, true);
    }
    map("dependencies", true);
    if (const auto* items = obj.if_contains("items"); items && items->is_array()) {
      list("items", false);
    } else {
      one("items", false);
    }
    for (const auto keyword : {"additionalItems", "contains", "propertyNames", "additionalProperties"}) {
      one(keyword, false);
    }
    map("properties", false);
    map("patternProperties", false);
  }

  // populateSchema's "id" handling.
  static scope_type scope_of(const graph_node& node, const json::object& obj) {
    const auto* id = obj.if_contains("id");
    if (!id || !id->is_string()) return node.scope;
    const std::string text(id->get_string());
    if (text.size() > max_ref_uri_length) {
      throw schema_refusal("\"id\" at " + schema_location(node.uri, append_pointer(node.pointer, "id")) +
                           " is longer than " + std::to_string(max_ref_uri_length) + " characters");
    }
    if (!node.scope || absolute_or_urn(text)) return text;
    return valijson::internal::uri::resolveRelativeUri(*node.scope, text);
  }

  static constexpr std::size_t no_node = static_cast<std::size_t>(-1);

  // The node a $ref leads to, or no_node when valijson will fail to load it
  // anyway (and say why).
  std::size_t follow(const graph_node& from, const std::string& ref) {
    namespace reference = valijson::internal::json_reference;
    const std::string where = schema_location(from.uri, append_pointer(from.pointer, "$ref"));
    const scope_type uri = reference::getJsonReferenceUri(ref);
    const std::string pointer = sanitise_pointer(reference::getJsonReferencePointer(ref));
    if (uri && uri->size() > max_ref_uri_length) {
      throw schema_refusal("$ref at " + where + ": its URI is longer than " +
                           std::to_string(max_ref_uri_length) + " characters");
    }
    if (static_cast<std::size_t>(std::ranges::count(pointer, '/')) > max_ref_pointer_tokens) {
      throw schema_refusal("$ref at " + where + ": its pointer has more than " +
                           std::to_string(max_ref_pointer_tokens) + " tokens");
    }
    graph_node target{from.document, from.uri, nullptr, from.scope, from.root_chain, "", {}};
    scope_type remote;
    if (from.root_chain) {  // resolveThenPopulateSchema
      if (uri && absolute_or_urn(*uri)) remote = uri;
      target.scope.reset();
    } else {  // makeOrReuseSchema
      const scope_type actual = resolve_document_uri(from.scope, uri);
      if (actual && (!from.scope || *actual != *from.scope)) remote = actual;
    }
    if (remote) {
      target.document = documents_.find(*remote);
      target.uri = *remote;
      if (!target.document) return no_node;
    }
    target.schema = resolve_pointer(*target.document, pointer, ref, where, target.pointer);
    return target.schema ? add(std::move(target)) : no_node;
  }

  // valijson's resolveJsonPointer; nullptr where it would throw. `canonical`
  // receives the pointer in RFC 6901 form.
  static const json::value* resolve_pointer(const json::value& document, const std::string& pointer,
                                            const std::string& ref, const std::string& where,
                                            std::string& canonical) {
    const json::value* node = &document;
    std::size_t pos = 0;
    while (pos < pointer.size()) {
      if (pointer[pos] != '/') return nullptr;
      const std::size_t next = std::min(pointer.find('/', pos + 1), pointer.size());
      std::string token;
      try {
        token = valijson::internal::json_pointer::extractReferenceToken(pointer.begin() + static_cast<std::ptrdiff_t>(pos) + 1,
                                                                        pointer.begin() + static_cast<std::ptrdiff_t>(next));
      } catch (const std::exception&) {
        return nullptr;
      }
      pos = next;
      if (token.empty()) continue;
      if ((token == "patternProperties" || token == "additionalProperties") && has_pattern_properties(*node)) {
        throw schema_refusal("$ref '" + ref + "' at " + where + " points into the " + token +
                             " of a schema that has patternProperties, which is not supported");
      }
      node = step(*node, token);
      if (!node) return nullptr;
      canonical = append_pointer(canonical, token);
    }
    return node;
  }

  static const json::value* step(const json::value& node, const std::string& token) {
    if (const auto* arr = node.if_array()) {
      if (token == "-") return nullptr;
      try {
        const unsigned long index = std::stoul(token);  // as valijson reads it
        return index < arr->size() ? &(*arr)[index] : nullptr;
      } catch (const std::exception&) {
        return nullptr;
      }
    }
    if (const auto* obj = node.if_object()) return obj->if_contains(token);
    return nullptr;
  }

  schema_documents& documents_;
  std::vector<graph_node> nodes_;
  std::vector<std::size_t> work_;
  std::map<std::tuple<const json::value*, scope_type, bool>, std::size_t> index_;
};

}  // namespace

void check_schema_graph(schema_documents& documents) {
  graph_builder graph(documents);
  graph.build();
  graph.check();
}

}  // namespace switchboard::protocol::detail
