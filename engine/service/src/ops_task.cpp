// The task op: one raw agent-task request (docs/agents.md "The lane"). The task layer parses it
// strictly (size first, strict JSON, the op's fields; engine/task) and the session state machine
// runs it (task.* are ops of that machine).
#include "ops_common.h"

#include <string>

#include "evident/session/manager.h"
#include "evident/task/request.h"

namespace evident {

void register_task_ops(OpTable& ops, SessionManager& sessions) {
  ops["task"] = [&sessions](const Actor& actor, const Json& args) -> Result<Json> {
    JsonFields f(args, "task-command", "args");
    EVIDENT_TRY(f.only({"request"}));
    auto text = f.string("request");
    if (!text.ok()) return text.error();
    auto req = task::parse_task_session_request(*text);
    if (!req) return req.error();
    Json r = sessions.handle(actor.to_json(), *req);
    if (!r.value("ok", false)) {
      const Json& e = r["error"];
      return make_error(e["code"].get<std::string>(), e["message"].get<std::string>(),
                        e["retryable"].get<bool>());
    }
    r.erase("ok");
    return r;
  };
}

}  // namespace evident
