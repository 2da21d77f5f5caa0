// Small progressive enhancements for the dashboard; every page works without them.
(function () {
  "use strict";

  function announce(button, text) {
    var status = document.querySelector(".copy-status");
    var original = button.getAttribute("data-label") || button.firstChild.textContent;
    button.setAttribute("data-label", original);
    button.firstChild.textContent = text;
    if (status) status.textContent = text;
    window.setTimeout(function () { button.firstChild.textContent = original; }, 2000);
  }

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    // Plain http on a LAN address: the async clipboard is unavailable, use a selection.
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      document.body.removeChild(area);
      if (ok) { resolve(); } else { reject(new Error("copy failed")); }
    });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy-target]");
    if (!button) return;
    var target = document.getElementById(button.getAttribute("data-copy-target"));
    if (!target) return;
    var text = "value" in target && target.tagName === "INPUT" ? target.value : target.textContent;
    copyText(text).then(
      function () { announce(button, "Copied"); },
      function () {
        if (target.select) target.select();
        announce(button, "Press Ctrl+C to copy");
      }
    );
  });

  // "Select all" for bulk actions: shown only when this script runs.
  document.querySelectorAll("[data-select-all]").forEach(function (box) {
    var name = box.getAttribute("data-select-all");
    var form = box.form;
    var label = box.closest("label");
    if (label) label.hidden = false;
    box.addEventListener("change", function () {
      form.querySelectorAll('input[type="checkbox"][name="' + name + '"]').forEach(function (item) {
        item.checked = box.checked;
      });
    });
  });

  // Panels that start open fold on a narrow screen, so the rows show on the first screen;
  // their summary names what they hold.
  document.querySelectorAll("details[data-collapse-below]").forEach(function (panel) {
    var width = panel.getAttribute("data-collapse-below");
    if (window.matchMedia("(max-width: " + width + ")").matches) panel.open = false;
  });

  // A form's error summary takes the focus, and its links take it on to their field.
  var summary = document.querySelector("[data-error-summary]");
  if (summary) summary.focus();
  document.addEventListener("click", function (event) {
    var link = event.target.closest("[data-error-summary] a[href^='#']");
    var field = link && document.getElementById(link.getAttribute("href").slice(1));
    if (!field) return;
    event.preventDefault();
    field.focus();
  });

  document.addEventListener("keydown", function (event) {
    var field = event.target;
    if (event.key !== "Enter" || event.ctrlKey || event.metaKey || event.altKey) return;
    if (!field.matches) return;
    if (field.matches('input[type="checkbox"]')) {
      // Ticking rows is not acting on them: Enter on a checkbox submits nothing.
      event.preventDefault();
    } else if (field.matches('form[method="get"] select')) {
      // Enter on a filter's drop-down applies it, as Enter in a text field does.
      event.preventDefault();
      if (field.form.requestSubmit) { field.form.requestSubmit(); } else { field.form.submit(); }
    }
  });

  // The review queue by keyboard: rows take the focus, single keys act on the focused row,
  // and after an action the page comes back naming the row to continue with (#row-…).
  var queue = document.querySelector("[data-review-queue]");
  if (!queue) return;
  var rows = Array.prototype.slice.call(queue.querySelectorAll("tbody tr[id^='row-']"));
  rows.forEach(function (row) { row.tabIndex = -1; });
  var help = document.getElementById("shortcuts");
  if (help) help.hidden = false;

  var landing = /^#row-/.test(window.location.hash) && document.getElementById(window.location.hash.slice(1));
  if (landing && rows.indexOf(landing) !== -1) landing.focus();

  function typing(target) {
    return target.isContentEditable || !!(target.closest && target.closest("input, textarea, select"));
  }

  function press(row, key) {
    var control = row && row.querySelector('[data-key="' + key + '"]');
    if (control) control.click();
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) return;
    var row = event.target.closest ? event.target.closest("tr[id^='row-']") : null;
    var at = rows.indexOf(row);
    switch (event.key) {
      case "j": case "n":
        if (rows.length) rows[Math.min(at + 1, rows.length - 1)].focus();
        break;
      case "k": case "p":
        if (rows.length) rows[Math.max(at - 1, 0)].focus();
        break;
      case "v": case "e": case "d":
        if (at === -1) return;
        press(row, event.key);
        break;
      case "u":
        var undo = document.querySelector("[data-undo]");
        if (!undo) return;
        undo.click();
        break;
      case "?":
        if (!help) return;
        help.open = !help.open;
        if (help.open) help.querySelector("summary").focus();
        break;
      default:
        return;
    }
    event.preventDefault();
  });
})();

/* searchsmall: the Tags filter offers the mind's tags for the tag being typed after a comma */
(function () {
  var input = document.querySelector("input[data-tag-list]");
  var list = input && document.getElementById(input.getAttribute("list"));
  if (!list) return;
  var options = Array.prototype.slice.call(list.querySelectorAll("option[data-tag]"));
  function offer() {
    // Each option completes the last tag: "office, mu" is offered "office, munich".
    var cut = input.value.lastIndexOf(",");
    var before = cut === -1 ? "" : input.value.slice(0, cut + 1).replace(/\s*$/, " ");
    var taken = before.split(",").map(function (t) { return t.trim().toLowerCase(); });
    options.forEach(function (option) {
      var tag = option.getAttribute("data-tag");
      option.value = before + tag;
      option.disabled = taken.indexOf(tag) !== -1;
    });
  }
  input.addEventListener("input", offer);
  offer();
})();

/* timefocus: times in the browser's own zone, the expiry field in local time, the status toast */
(function () {
  "use strict";

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  var zone = "";
  var zoneNames = null;
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
    zoneNames = new Intl.DateTimeFormat("en-GB", { timeZoneName: "short" });
  } catch (e) { zoneNames = null; }

  function zoneName(date) {
    if (!zoneNames || !zoneNames.formatToParts) return "";
    var part = zoneNames.formatToParts(date).filter(function (p) { return p.type === "timeZoneName"; })[0];
    return part ? part.value : "";
  }

  function day(date) {
    return date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate());
  }

  function clock(date, seconds) {
    return pad(date.getHours()) + ":" + pad(date.getMinutes()) + (seconds ? ":" + pad(date.getSeconds()) : "");
  }

  // Every <time> the server wrote in UTC (its title says so) reads in this browser's zone;
  // the title keeps UTC for a hover. Markup added later (the chat's new messages) calls it
  // again through window.synapseLocalTimes.
  function localTimes(root) {
    root.querySelectorAll("time[datetime][title$=' UTC']").forEach(function (element) {
      var date = new Date(element.getAttribute("datetime"));
      var name = zoneName(date);
      if (isNaN(date.getTime()) || !name) return;
      var seconds = /\d:\d\d:\d\d /.test(element.getAttribute("title"));
      element.textContent = day(date) + " " + clock(date, seconds) + " " + name;
    });
  }
  localTimes(document);
  window.synapseLocalTimes = localTimes;

  // A date-and-time input the server reads as UTC plus an offset (minutes east of UTC, in
  // the field it names): shown and typed in local time, its offset sent along.
  var LOCAL = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d))?$/;
  document.querySelectorAll("input[data-offset-field]").forEach(function (input) {
    var offset = input.form && input.form.elements[input.getAttribute("data-offset-field")];
    if (!offset || !zoneNames) return;
    var shown = LOCAL.exec(input.value);
    if (shown) {
      // What the server sent, in the zone its offset names, as this browser's local time.
      var east = parseInt(offset.value, 10) || 0;
      var moment = new Date(Date.UTC(+shown[1], shown[2] - 1, +shown[3], +shown[4], +shown[5]) - east * 60000);
      input.value = day(moment) + "T" + clock(moment, false);
    }
    function keepOffset() {
      var typed = LOCAL.exec(input.value);
      var at = typed ? new Date(+typed[1], typed[2] - 1, +typed[3], +typed[4], +typed[5]) : new Date();
      offset.value = String(-at.getTimezoneOffset());
    }
    keepOffset();
    input.addEventListener("change", keepOffset);
    input.addEventListener("input", keepOffset);
    input.form.addEventListener("submit", keepOffset);
    var label = document.querySelector('label[for="' + input.id + '"]');
    var where = zone ? "your time zone, " + zone : "your time zone";
    if (label) label.textContent = label.textContent.replace("(UTC)", "(" + where + ")");
  });

  // The status messages (and their Undo) stand in the viewport whatever was scrolled to:
  // the page keeps room below its end, and focus never hides behind them.
  var toast = document.querySelector("main > .messages");
  if (!toast) return;
  var root = document.documentElement;
  function makeRoom() {
    root.style.setProperty("--toast-room", toast.hidden ? "0px" : toast.offsetHeight + 16 + "px");
  }
  var dismiss = document.createElement("button");
  dismiss.type = "button";
  dismiss.className = "link-button toast-dismiss";
  dismiss.textContent = "Dismiss";
  dismiss.addEventListener("click", function () {
    toast.hidden = true;
    makeRoom();
    document.getElementById("main").focus();
  });
  toast.appendChild(dismiss);
  makeRoom();
  window.addEventListener("resize", makeRoom);
})();

/* bulkundo: how many rows are ticked for a bulk action, said beside "Select all". */
(function () {
  "use strict";
  document.querySelectorAll("[data-selected-count]").forEach(function (count) {
    var form = count.closest("form");
    if (!form) return;
    var all = form.querySelector("[data-select-all]");
    function boxes() {
      return Array.prototype.slice.call(form.querySelectorAll('input[type="checkbox"][name="memory"]'));
    }
    function update() {
      var items = boxes();
      var ticked = items.filter(function (box) { return box.checked; }).length;
      count.textContent = ticked + " of " + items.length + " selected";
      if (all) {
        all.checked = items.length > 0 && ticked === items.length;
        all.indeterminate = ticked > 0 && ticked < items.length;
      }
    }
    count.hidden = false;
    form.addEventListener("change", function (event) {
      if (event.target.matches('input[type="checkbox"]')) window.setTimeout(update, 0);
    });
    update();
  });
})();
