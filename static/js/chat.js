// The Chat tab: new messages appear without a reload. Every few seconds the page asks for
// the messages after the last one it shows and adds them to the log, which announces them
// politely (aria-live). Without this script the page still works: reload to see answers.
(function () {
  "use strict";

  var log = document.getElementById("chat-log");
  if (!log || !window.fetch) return;
  var url = log.getAttribute("data-url");
  var seconds = parseInt(log.getAttribute("data-seconds"), 10) || 3;
  var after = parseInt(log.getAttribute("data-after"), 10) || 0;
  var status = document.getElementById("chat-status");
  var empty = document.getElementById("chat-empty");
  var busy = false;

  function showStatus(online) {
    if (!status) return;
    var text = status.getAttribute(online ? "data-online-text" : "data-offline-text");
    if (status.getAttribute("data-online") !== String(online)) {
      status.setAttribute("data-online", String(online));
      status.textContent = text;
    }
  }

  function add(html) {
    var holder = document.createElement("ol");
    holder.innerHTML = html;
    if (window.synapseLocalTimes) window.synapseLocalTimes(holder);
    Array.prototype.slice.call(holder.children).forEach(function (item) {
      if (!document.getElementById(item.id)) log.appendChild(item);
    });
    if (empty) empty.hidden = log.children.length > 0;
  }

  function check() {
    if (busy || document.hidden) return;
    busy = true;
    fetch(url + "?after=" + after, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (answer) {
        if (!answer) return;
        if (answer.html && answer.html.trim()) add(answer.html);
        after = Math.max(after, answer.last || 0);
        log.setAttribute("data-after", String(after));
        showStatus(answer.agent_online);
      })
      .catch(function () { /* offline for a moment: the next check tries again */ })
      .then(function () { busy = false; });
  }

  window.setInterval(check, seconds * 1000);
  document.addEventListener("visibilitychange", check);
})();
