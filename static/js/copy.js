// Copy buttons: <button data-copy-target="ID" data-copy-status="STATUS_ID"> copies the value of #ID.
// The buttons start hidden and are shown only where the clipboard API exists (a secure context), so a
// page without JavaScript never shows a button that does nothing: the value is selected by hand.
(function () {
  "use strict";
  if (!navigator.clipboard) return;

  function reveal(root) {
    root.querySelectorAll("[data-copy-target][hidden]").forEach(function (button) {
      button.hidden = false;
    });
  }

  function announce(button, text) {
    var status = document.getElementById(button.dataset.copyStatus || "");
    if (status) status.textContent = text;
    window.setTimeout(function () {
      delete button.dataset.copied;
      if (status) status.textContent = "";
    }, 2500);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy-target]");
    if (!button) return;
    var source = document.getElementById(button.dataset.copyTarget);
    if (!source) return;
    var isField = source instanceof HTMLInputElement || source instanceof HTMLTextAreaElement;
    var text = (isField ? source.value : source.textContent).trim();
    navigator.clipboard.writeText(text).then(
      function () {
        button.dataset.copied = "";
        announce(button, "Copied to the clipboard.");
      },
      function () {
        if (isField) source.select();
        announce(button, "Could not copy: the value is selected, copy it with your keyboard.");
      }
    );
  });

  reveal(document);
  document.addEventListener("htmx:load", function (event) {
    reveal(event.target);
  });
})();
