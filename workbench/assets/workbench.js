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

// A value stored as blobs loads in place when its link is clicked: the blob
// page's text (shown visibly, as the page made it) replaces the marker that
// named it. Without the script the link opens the blob page.
function loadBlobsInPlace() {
  document.addEventListener("click", async (event) => {
    const link = event.target.closest && event.target.closest("a.blob");
    if (!link) return;
    event.preventDefault();
    const block = link.closest(".block");
    const pre = block && block.querySelector("pre");
    if (!pre) { window.location.href = link.href; return; }
    link.textContent = "loading…";
    try {
      const answer = await fetch(link.href, { credentials: "same-origin" });
      if (!answer.ok) { link.textContent = "could not load it: the page answered " + answer.status; return; }
      const page = new DOMParser().parseFromString(await answer.text(), "text/html");
      const text = page.getElementById("blob-text");
      if (!text) { link.textContent = "could not load it"; return; }
      pre.textContent = text.textContent;
      const details = block.querySelector("details");
      if (details) details.open = true;
      const note = page.querySelector("p.note");
      link.textContent = note ? note.textContent : "loaded";
      link.classList.add("loaded");
    } catch (e) {
      link.textContent = "could not load it: " + e;
    }
  });
}

document.addEventListener("DOMContentLoaded", followSession);
document.addEventListener("DOMContentLoaded", loadBlobsInPlace);
