// The filter form of the webmail's settings: show the folder only for "Move to folder" and the label
// only for "Add label". Progressive: without this file both stay visible and their help says when
// they apply; the server checks the choice either way.
(function () {
  "use strict";

  function sync(form) {
    var action = form.querySelector("select[name='action']");
    if (!action) return;
    form.querySelectorAll("[data-for-action]").forEach(function (field) {
      var shown = field.getAttribute("data-for-action") === action.value;
      field.hidden = !shown;
      field.querySelectorAll("select, input").forEach(function (input) { input.disabled = !shown; });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form[data-filter-form]").forEach(function (form) {
      sync(form);
      form.addEventListener("change", function (event) {
        if (event.target.name === "action") sync(form);
      });
    });
  });
})();
