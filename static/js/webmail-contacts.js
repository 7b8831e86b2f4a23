// Webmail contacts: the list's "Select page" box ticks or clears every contact on the page. Progressive: without
// JavaScript each contact's own box works and the box does nothing.
(function () {
  "use strict";
  document.addEventListener("change", function (event) {
    if (!event.target.matches("[data-select-all-contacts]")) return;
    var form = event.target.form;
    form.querySelectorAll("input[name=contacts]").forEach(function (box) { box.checked = event.target.checked; });
  });
})();
