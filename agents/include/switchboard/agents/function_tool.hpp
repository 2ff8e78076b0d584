// function_tool: a C++ function as a tool, its arguments a struct that
// Boost.JSON converts (a tag_invoke, or a Boost.Describe'd struct).
//
//   struct lookup_args { std::string date; std::optional<std::string> person; };
//   BOOST_DESCRIBE_STRUCT(lookup_args, (), (date, person))
//
//   registry.add(agents::make_function_tool<lookup_args>(
//       "calendar.lookup", "Events on a date.",
//       [&](lookup_args a) -> boost::json::value { return calendar.on(a.date); }));
//
// `fn` takes (Args) or (tool_context&, Args) and returns boost::json::value
// (or a type it converts from, such as boost::json::object), a tool_result,
// or an asio::awaitable of either. Arguments that do not convert to Args
// end in tool_result error "invalid_arguments" naming the type and Boost.JSON's
// reason; no exception escapes for them. Exceptions thrown by `fn` itself
// propagate as from any tool (tool.hpp).
//
// schema_of<T>() derives the parameters schema of a described struct whose
// members are std::string, bool, integers, floating point, std::optional<...>,
// std::vector<...> or described structs. Every member is listed as
// required, an optional one as nullable ({"anyOf": [..., {"type": "null"}]}),
// and additionalProperties is false: that is what Boost.JSON 1.81's
// conversion of described structs accepts (it wants every member present and
// no other), and the form OpenAI's strict mode asks for. Types outside that
// list fail to compile; write the schema by hand and pass it instead.
//
// Thread-safety: as tool.hpp; `fn` may be called concurrently and must be
// safe for that. Lifetime: `fn` (and what it captures) lives as long as the
// tool.
#pragma once

#include <switchboard/agents/tool.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/core/type_name.hpp>
#include <boost/describe.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value_to.hpp>
#include <boost/mp11/algorithm.hpp>

#include <concepts>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace switchboard::agents {

struct function_tool_options {
  bool needs_approval = false;  // see tool.hpp
  bool idempotent = false;
};

namespace detail {

template <class T> struct is_std_optional : std::false_type {};
template <class T> struct is_std_optional<std::optional<T>> : std::true_type {};
template <class T> struct is_std_vector : std::false_type {};
template <class T, class A> struct is_std_vector<std::vector<T, A>> : std::true_type {};
template <class T> struct is_awaitable : std::false_type {};
template <class T, class E> struct is_awaitable<boost::asio::awaitable<T, E>> : std::true_type {};

template <class T>
inline constexpr bool is_described_struct =
    boost::describe::has_describe_members<T>::value && std::is_class_v<T>;

template <class T>
boost::json::object schema_for();

}  // namespace detail

// The parameters schema of a described struct (see above).
template <class T>
  requires detail::is_described_struct<T>
boost::json::object schema_of() {
  namespace describe = boost::describe;
  boost::json::object properties;
  boost::json::array required;
  using members = describe::describe_members<T, describe::mod_public | describe::mod_inherited>;
  boost::mp11::mp_for_each<members>([&](auto d) {
    using member = std::remove_cvref_t<decltype(std::declval<T&>().*d.pointer)>;
    properties[d.name] = detail::schema_for<member>();
    required.emplace_back(d.name);
  });
  return {{"type", "object"},
          {"properties", std::move(properties)},
          {"required", std::move(required)},
          {"additionalProperties", false}};
}

namespace detail {

template <class T>
boost::json::object schema_for() {
  if constexpr (std::is_same_v<T, std::string>) {
    return {{"type", "string"}};
  } else if constexpr (std::is_same_v<T, bool>) {
    return {{"type", "boolean"}};
  } else if constexpr (std::is_integral_v<T>) {
    boost::json::object s{{"type", "integer"}};
    if constexpr (std::is_unsigned_v<T>) s["minimum"] = 0;
    return s;
  } else if constexpr (std::is_floating_point_v<T>) {
    return {{"type", "number"}};
  } else if constexpr (is_std_optional<T>::value) {
    return {{"anyOf", boost::json::array{schema_for<typename T::value_type>(),
                                         boost::json::object{{"type", "null"}}}}};
  } else if constexpr (is_std_vector<T>::value) {
    return {{"type", "array"}, {"items", schema_for<typename T::value_type>()}};
  } else if constexpr (is_described_struct<T>) {
    return schema_of<T>();
  } else {
    static_assert(sizeof(T) == 0,
                  "schema_of: member type not supported; pass the schema to make_function_tool instead");
  }
}

inline tool_result to_tool_result(tool_result r) { return r; }
template <class V>
  requires std::constructible_from<boost::json::value, V&&>
tool_result to_tool_result(V&& v) {
  return tool_result(boost::json::value(std::forward<V>(v)));
}

}  // namespace detail

template <class Args, class Fn>
class function_tool final : public tool {
 public:
  function_tool(std::string name, std::string description, boost::json::object schema, Fn fn,
                function_tool_options options)
      : name_(std::move(name)),
        description_(std::move(description)),
        schema_(std::move(schema)),
        fn_(std::move(fn)),
        options_(options) {}

  std::string_view name() const noexcept override { return name_; }
  std::string_view description() const noexcept override { return description_; }
  boost::json::object parameters() const override { return schema_; }
  bool needs_approval() const noexcept override { return options_.needs_approval; }
  bool idempotent() const noexcept override { return options_.idempotent; }

  boost::asio::awaitable<tool_result> call(tool_context& context, const boost::json::value& arguments) override {
    std::optional<Args> args;
    std::string why;
    convert(arguments, args, why);
    if (!args) co_return tool_result::failure("invalid_arguments", why);
    auto outcome = invoke(context, std::move(*args));
    if constexpr (detail::is_awaitable<decltype(outcome)>::value) {
      co_return detail::to_tool_result(co_await std::move(outcome));
    } else {
      co_return detail::to_tool_result(std::move(outcome));
    }
  }

 private:
  // Not a coroutine: a throwing user tag_invoke is caught here too.
  void convert(const boost::json::value& arguments, std::optional<Args>& out, std::string& why) const {
    const std::string type = boost::core::type_name<Args>();
    try {
      auto r = boost::json::try_value_to<Args>(arguments);
      if (r) {
        out.emplace(std::move(*r));
      } else {
        why = "arguments of tool '" + name_ + "' do not convert to " + type + ": " + r.error().message();
      }
    } catch (const std::exception& e) {
      why = "arguments of tool '" + name_ + "' do not convert to " + type + ": " + e.what();
    }
  }

  decltype(auto) invoke(tool_context& context, Args&& args) {
    if constexpr (std::invocable<Fn&, tool_context&, Args&&>) {
      return fn_(context, std::move(args));
    } else {
      static_assert(std::invocable<Fn&, Args&&>, "make_function_tool: fn must take (Args) or (tool_context&, Args)");
      return fn_(std::move(args));
    }
  }

  std::string name_;
  std::string description_;
  boost::json::object schema_;
  Fn fn_;
  function_tool_options options_;
};

// A tool calling `fn` with the arguments converted to Args; `schema`
// describes them to the model and the registry's validation.
template <class Args, class Fn>
std::shared_ptr<tool> make_function_tool(std::string name, std::string description, boost::json::object schema,
                                         Fn fn, function_tool_options options = {}) {
  return std::make_shared<function_tool<Args, Fn>>(std::move(name), std::move(description), std::move(schema),
                                                   std::move(fn), options);
}

// As above, the schema derived with schema_of<Args>().
template <class Args, class Fn>
  requires detail::is_described_struct<Args>
std::shared_ptr<tool> make_function_tool(std::string name, std::string description, Fn fn,
                                         function_tool_options options = {}) {
  return make_function_tool<Args>(std::move(name), std::move(description), schema_of<Args>(), std::move(fn),
                                  options);
}

}  // namespace switchboard::agents
