// cmdlog's workbench: the few things a page does better with a script.
// Everything here is an enhancement: every page reads whole without it.
"use strict";

// A session's last page follows the session: when the daemon says the
// session gained events (`appended`, over SSE), the page fetches itself and
// puts the new conversation and facts in place, scrolled where it was.
function followSession() {
  const main = document.querySelector("main[data-live]");
  if (!main || typeof EventSource === "undefined") return;
  const status = document.getElementById("live");
  const say = (text) => { if (status) status.textContent = text; };
  let source = null;
  let pending = false;
  const refresh = async () => {
    if (pending) return;
    pending = true;
    try {
      const answer = await fetch(window.location.href, { credentials: "same-origin" });
      if (!answer.ok) { say("not following: the page answered " + answer.status); return; }
      const page = new DOMParser().parseFromString(await answer.text(), "text/html");
      const fresh = page.querySelector("main[data-live]");
      if (!fresh) return;
      for (const part of ["dl.facts", "p.entries", "ol.conversation"]) {
        const here = main.querySelector(part);
        const there = fresh.querySelector(part);
        if (here && there) here.replaceWith(document.importNode(there, true));
      }
      const next = fresh.getAttribute("data-live");
      if (next !== main.getAttribute("data-live")) {
        main.setAttribute("data-live", next);
        connect();
      }
      say("following: updated " + new Date().toLocaleTimeString());
    } finally {
      pending = false;
    }
  };
  const connect = () => {
    if (source) source.close();
    source = new EventSource(main.getAttribute("data-live"));
    source.addEventListener("appended", refresh);
    source.onopen = () => say("following this session as it is recorded");
    source.onerror = () => say("following: reconnecting…");
  };
  connect();
}

document.addEventListener("DOMContentLoaded", followSession);
