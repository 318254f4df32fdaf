// The session op: one raw session-protocol request (docs/sessions.md).
#include "ops_common.h"

#include <memory>
#include <mutex>
#include <string>

#include "evident/session/manager.h"

namespace evident {

void register_session_ops(OpTable& ops, SessionManager& sessions) {
  // One raw §5 request; the session layer parses it strictly (size first, duplicate keys at
  // any depth). docs/sessions.md.
  ops["session"] = [&sessions](const Actor& actor, const Json& args) -> Result<Json> {
    JsonFields f(args, "session-command", "args");
    EVIDENT_TRY(f.only({"request"}));
    auto text = f.string("request");
    if (!text.ok()) return text.error();
    Json r = sessions.handle(actor.to_json(), *text);
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
