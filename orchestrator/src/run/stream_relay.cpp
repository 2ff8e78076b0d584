#include "stream_relay.hpp"

#include <boost/asio/dispatch.hpp>

#include <algorithm>

namespace switchboard::orchestrator::detail {

namespace asio = boost::asio;

namespace {

class stream_relay final : public models::stream_sink, public std::enable_shared_from_this<stream_relay> {
 public:
  stream_relay(std::vector<std::shared_ptr<observer>> observers, asio::any_io_executor strand, stream_origin origin)
      : observers_(std::move(observers)), strand_(std::move(strand)), origin_(std::move(origin)) {}

  void on_text(std::string_view delta) override {
    // dispatch: inline when the agent runs on the run's strand (the usual
    // case), else queued there behind the pieces before it.
    asio::dispatch(strand_, [self = shared_from_this(), text = std::string(delta)] {
      auto e = self->make(event_kind::text_delta);
      e.text = text;
      self->emit(e);
    });
  }

  void on_tool_call(const tool_call_delta& delta) override {
    asio::dispatch(strand_, [self = shared_from_this(), index = delta.index, id = std::string(delta.id),
                             name = std::string(delta.name), arguments = std::string(delta.arguments)] {
      const tool_call_delta piece{index, id, name, arguments};
      auto e = self->make(event_kind::tool_call_delta);
      e.tool_delta = &piece;
      self->emit(e);
    });
  }

  void on_restart() override {
    asio::dispatch(strand_, [self = shared_from_this()] { self->emit(self->make(event_kind::stream_restarted)); });
  }

 private:
  event make(event_kind kind) const {
    event e{};
    e.kind = kind;
    e.workflow_id = origin_.workflow_id;
    e.workflow_name = origin_.workflow_name;
    e.step = origin_.step;
    e.node = origin_.node;
    e.agent = origin_.agent;
    return e;
  }

  void emit(const event& e) const {
    for (const auto& o : observers_) o->on_event(e);
  }

  std::vector<std::shared_ptr<observer>> observers_;  // those that want deltas
  asio::any_io_executor strand_;
  stream_origin origin_;
};

}  // namespace

std::shared_ptr<models::stream_sink> make_stream_relay(const std::vector<std::shared_ptr<observer>>& observers,
                                                       asio::any_io_executor strand, stream_origin origin) {
  std::vector<std::shared_ptr<observer>> wanting;
  std::copy_if(observers.begin(), observers.end(), std::back_inserter(wanting),
               [](const auto& o) { return o && o->wants_deltas(); });
  if (wanting.empty()) return nullptr;
  return std::make_shared<stream_relay>(std::move(wanting), std::move(strand), std::move(origin));
}

}  // namespace switchboard::orchestrator::detail
