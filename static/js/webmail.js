// Webmail keyboard shortcuts (Gmail's keys) and the list's "select page" box. Progressive: every
// action is also a link, button or form that works without this file.
(function () {
  "use strict";

  var help = function () { return document.getElementById("shortcuts"); };
  var lastFocus = null;

  function typing(target) {
    if (!target) return false;
    var tag = target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
  }

  function rows() { return Array.prototype.slice.call(document.querySelectorAll("[data-message-row]")); }

  function current() { return document.querySelector("[data-message-row].mail-row--current"); }

  function setCurrent(row) {
    rows().forEach(function (other) { other.classList.remove("mail-row--current"); other.removeAttribute("aria-current"); });
    if (!row) return;
    row.classList.add("mail-row--current");
    row.setAttribute("aria-current", "true");
    var link = row.querySelector("[data-open]");
    if (link) link.focus({ preventScroll: false });
  }

  function step(delta) {
    var all = rows();
    if (!all.length) return false;
    var index = all.indexOf(current());
    var next = index < 0 ? 0 : Math.min(all.length - 1, Math.max(0, index + delta));
    setCurrent(all[next]);
    return true;
  }

  // On the list: act on the current row through the bulk form (so the server does the work).
  function bulk(action, target) {
    var row = current();
    var form = document.querySelector(".mail-list__form");
    if (!row || !form) return false;
    form.querySelectorAll("input[name=uids]").forEach(function (box) { box.checked = false; });
    row.querySelector("input[name=uids]").checked = true;
    form.querySelector("select[name=action]").value = action;
    if (target) form.querySelector("select[name=target]").value = target;
    form.requestSubmit();
    return true;
  }

  function click(name) {
    var element = document.querySelector('[data-shortcut="' + name + '"]');
    if (!element) return false;
    if (element.tagName === "INPUT" || element.tagName === "TEXTAREA") element.focus();
    else element.click();
    return true;
  }

  function toggleHelp(show) {
    var panel = help();
    if (!panel) return false;
    var open = show === undefined ? panel.hidden : show;
    if (open) {
      lastFocus = document.activeElement;
      panel.hidden = false;
      panel.querySelector("[data-shortcuts-close]").focus();
    } else {
      panel.hidden = true;
      if (lastFocus) lastFocus.focus();
    }
    return true;
  }

  var keys = {
    "j": function () { return step(1); },
    "k": function () { return step(-1); },
    "o": function () { var row = current(); if (!row) return false; row.querySelector("[data-open]").click(); return true; },
    "r": function () { return click("reply"); },
    "a": function () { return click("reply-all"); },
    "f": function () { return click("forward"); },
    "c": function () { var link = document.querySelector(".webmail-nav__compose"); if (!link) return false; link.click(); return true; },
    "e": function () { return bulk("move", "Archive") || click("archive"); },
    "#": function () { return bulk("delete") || click("delete"); },
    "s": function () { return bulk(current() && current().classList.contains("mail-row--starred") ? "unstar" : "star") || click("star"); },
    "/": function () { return click("search"); },
    "?": function () { return toggleHelp(); }
  };

  document.addEventListener("keydown", function (event) {
    var panel = help();
    if (event.key === "Escape" && panel && !panel.hidden) { toggleHelp(false); event.preventDefault(); return; }
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      var form = event.target.closest && event.target.closest("form[data-compose]");
      var send = form && form.querySelector("[data-send]");
      if (send) { event.preventDefault(); send.click(); }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (event.key === "Enter" && current() && document.activeElement === current().querySelector("[data-open]")) return;
    var action = keys[event.key];
    if (action && action()) event.preventDefault();
  });

  document.addEventListener("click", function (event) {
    var close = event.target.closest("[data-shortcuts-close]");
    if (close || event.target.id === "shortcuts") toggleHelp(false);
  });

  // "Select page": ticks or clears every row's box.
  document.addEventListener("change", function (event) {
    if (!event.target.matches("[data-select-all]")) return;
    var form = event.target.form;
    form.querySelectorAll("input[name=uids]").forEach(function (box) { box.checked = event.target.checked; });
  });
})();
