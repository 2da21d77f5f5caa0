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
})();
