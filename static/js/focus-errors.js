// After htmx swaps in a form that came back with errors, move keyboard focus to the first invalid
// field (Django marks it aria-invalid="true"), so keyboard and screen-reader users land on the error
// message instead of being left on the button. Without JavaScript the form posts normally.
(function () {
  "use strict";
  document.addEventListener("htmx:afterSwap", function (event) {
    var region = event.detail.target;
    if (!region || !region.isConnected) region = document.getElementById(event.detail.target && event.detail.target.id);
    if (!region) return;
    var invalid = region.querySelector('[aria-invalid="true"]');
    if (invalid) invalid.focus();
  });
})();
