// Swagger UI (/api/docs) made readable by a screen reader and a keyboard: the parts it draws
// outside its <main> become named regions, its title sits one level below the page's heading,
// and the controls it leaves unnamed get names. Swagger UI redraws as the reader opens
// things, so this runs again after each change.
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  if (!root) return;

  function each(selector, apply) {
    root.querySelectorAll(selector).forEach(apply);
  }

  function name(element, text) {
    element.setAttribute("aria-label", text);
  }

  function operation(element) {
    var block = element.closest(".opblock");
    var method = block && block.querySelector(".opblock-summary-method");
    var path = block && block.querySelector(".opblock-summary-path");
    return block ? (method ? method.textContent : "") + " " + (path ? path.textContent : "") : "";
  }

  function label() {
    each(".information-container:not([role])", function (part) {
      part.setAttribute("role", "region");
      name(part, "About this API");
    });
    each(".scheme-container:not([role])", function (part) {
      part.setAttribute("role", "region");
      name(part, "Authorization");
    });
    each("h1.title:not([aria-level])", function (title) { title.setAttribute("aria-level", "2"); });
    each("tr[data-param-name]", function (row) {
      var text = row.getAttribute("data-param-name") + " (" + row.getAttribute("data-param-in") + ")";
      row.querySelectorAll("select:not([aria-label]), textarea:not([aria-label]), " +
        "input:not([type=checkbox]):not([aria-label])").forEach(function (control) {
        name(control, text);
      });
    });
    each("textarea.body-param__text:not([aria-label])", function (body) {
      name(body, "Request body of " + operation(body));
    });
    each("table.responses-table[role=region]:not([aria-label])", function (table) {
      name(table, "Responses of " + operation(table));
    });
    each("button.close-modal:not([aria-label])", function (button) { name(button, "Close"); });
    // A sample wider than its box scrolls: it takes the focus so that keys can scroll it.
    each("pre.microlight:not([tabindex])", function (sample) { sample.tabIndex = 0; });
  }

  new MutationObserver(label).observe(root, { childList: true, subtree: true });
  label();
})();
