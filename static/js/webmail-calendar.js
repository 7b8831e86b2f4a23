// The webmail calendar. Progressive: every page works without this file.
// - On the first visit (the calendar has no time zone yet) post the browser's IANA zone once, then reload
//   a view so its times are shown in that zone (a form being filled in is left alone).
// - The event form: hide the times of an all-day event, the custom colour unless "Other" is chosen, and
//   the recurrence fields that do not apply to the chosen repeat (or to a change of one occurrence).
// - Week and day views: scroll the hour grid to the morning (or the first event).
(function () {
  "use strict";

  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (error) {
      return "";
    }
  }

  function presetTimezone() {
    var marker = document.querySelector("[data-calendar-timezone-preset]");
    if (!marker || !window.fetch || !window.Intl) return;
    var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (!zone || zone === "UTC" || zone === "Etc/UTC") return;
    var body = new URLSearchParams();
    body.set("timezone", zone);
    fetch(marker.getAttribute("data-calendar-timezone-preset"), {
      method: "POST", body: body, credentials: "same-origin", headers: {"X-CSRFToken": csrfToken()},
    }).then(function (response) {
      if (response.status === 204 && document.querySelector(".cal-toolbar")) {  // a view, not a form being filled
        window.location.reload();
      }
    }).catch(function () {});
  }

  function show(element, shown) {
    element.hidden = !shown;
  }

  function syncForm(form) {
    var allDay = form.querySelector("input[name='all_day']");
    form.querySelectorAll("[data-calendar-time]").forEach(function (field) { show(field, !(allDay && allDay.checked)); });
    var color = form.querySelector("input[name='color']:checked");
    var custom = form.querySelector("[data-calendar-custom-color]");
    if (custom) show(custom, !!color && color.value === "custom");
    var scope = form.querySelector("input[name='scope']:checked");
    var repeatBox = form.querySelector("[data-calendar-repeat]");
    if (repeatBox) show(repeatBox, !scope || scope.value === "all");
    var repeat = form.querySelector("select[name='repeat']");
    form.querySelectorAll("[data-calendar-for-repeat]").forEach(function (field) {
      var kinds = field.getAttribute("data-calendar-for-repeat").split(" ");
      show(field, !!repeat && kinds.indexOf(repeat.value) !== -1);
    });
  }

  function keepDuration(form) {
    // Moving the start moves the end with it (the same length), as calendar apps do.
    var names = ["start_date", "start_time", "end_date", "end_time"];
    var inputs = names.map(function (name) { return form.querySelector("input[name='" + name + "']"); });
    if (inputs.some(function (input) { return !input; })) return;
    function moment(dateInput, timeInput) {
      var value = dateInput.value + "T" + (timeInput.value || "00:00") + ":00Z";
      var parsed = Date.parse(value);
      return isNaN(parsed) ? null : parsed;
    }
    var length = null;
    function remember() {
      var start = moment(inputs[0], inputs[1]);
      var end = moment(inputs[2], inputs[3]);
      length = start !== null && end !== null ? end - start : null;
    }
    remember();
    [inputs[0], inputs[1]].forEach(function (input) {
      input.addEventListener("change", function () {
        var start = moment(inputs[0], inputs[1]);
        if (start === null || length === null || length < 0) return remember();
        var end = new Date(start + length).toISOString();
        inputs[2].value = end.slice(0, 10);
        if (inputs[3].value) inputs[3].value = end.slice(11, 16);
      });
    });
    [inputs[2], inputs[3]].forEach(function (input) { input.addEventListener("change", remember); });
  }

  function scrollGrid() {
    var scroller = document.querySelector("[data-calendar-scroll]");
    if (!scroller) return;
    var first = scroller.querySelector(".cal-event");
    var hour = scroller.scrollHeight / 24;
    var target = 7 * hour;
    if (first) target = Math.min(target, first.offsetTop - hour / 2);
    scroller.scrollTop = Math.max(0, target);
  }

  document.addEventListener("DOMContentLoaded", function () {
    presetTimezone();
    document.querySelectorAll("form[data-calendar-event-form]").forEach(function (form) {
      syncForm(form);
      keepDuration(form);
      form.addEventListener("change", function () { syncForm(form); });
    });
    scrollGrid();
  });
})();
