// The webmail's compose form, improved: the rich text editor (vendored Squire), autosave of the draft every few
// seconds and on leaving, attachments uploaded at once with progress, address suggestions; and the sent page's
// undo countdown. Without this file the form is a plain multipart POST that does all of it but the editor.
(function () {
  "use strict";

  var AUTOSAVE_MS = 5000;
  var RETRY_MS = 30000;
  var SIGNED_OUT = "The draft could not be saved: you are signed out. Sign in again in another tab, then it saves again.";

  function localTimes(root) {
    root.querySelectorAll("time[data-local-time]").forEach(function (element) {
      var when = new Date(element.getAttribute("datetime"));
      if (!isNaN(when)) element.textContent = when.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
    });
  }

  // The sent page: "Sending in N s", then a reload shows what became of it.
  function countdown() {
    var status = document.querySelector("[data-countdown]");
    if (!status) return;
    var left = parseInt(status.getAttribute("data-countdown"), 10) || 0;
    if (left <= 0) return;
    var timer = setInterval(function () {
      left -= 1;
      if (left > 0) {
        status.textContent = "Sending in " + left + " s";
        return;
      }
      clearInterval(timer);
      status.textContent = "Sending now…";
      setTimeout(function () { window.location.reload(); }, 1500);
    }, 1000);
  }

  function escapeHtml(text) {
    return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }

  function textToHtml(text) {
    if (!text) return "<div><br></div>";
    return text.split("\n").map(function (line) {
      return "<div>" + (line ? escapeHtml(line) : "<br>") + "</div>";
    }).join("");
  }

  function Compose(form) {
    this.form = form;
    this.textarea = form.querySelector("textarea[name=body]");
    this.html = form.querySelector("input[name=body_html]");
    this.format = form.querySelector("input[name=format]");
    this.holder = form.querySelector("[data-editor]");
    this.problem = form.querySelector("[data-draft-problem]");
    this.uploads = form.querySelector("[data-uploads]");
    this.files = form.querySelector("input[type=file][name=files]");
    this.autosaveUrl = form.getAttribute("data-autosave-url");
    this.suggestUrl = form.getAttribute("data-suggest-url");
    this.editor = null;
    this.rich = false;
    this.busy = false; // a save or an upload is under way
    this.submitting = false;
    this.pendingSubmit = null;
    this.uploadWaiting = false;
    this.attachmentsChanged = false;
    this.retryAt = 0;
    this.setUpTimeZone();
    this.setUpEditor(form.getAttribute("data-rich") === "true");
    this.lastSaved = this.snapshot();
    this.setUpAutosave();
    this.setUpUploads();
    this.setUpSuggestions();
    this.setFocus();
  }

  Compose.prototype.csrf = function () {
    var input = this.form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  };

  Compose.prototype.setUpTimeZone = function () {
    var zone = "";
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (error) { zone = ""; }
    var input = this.form.querySelector("input[name=tz]");
    var hint = document.getElementById("id_send_at_helptext");
    if (input && zone) {
      input.value = zone;
      if (hint) hint.textContent = "The time is in your time zone (" + zone + ").";
    }
  };

  // Rich text ----------------------------------------------------------------------------------------------------

  // The visible text is the button's name (B, I and U are named Bold, Italic and Underline, which contain it).
  var BUTTONS = [
    { label: "Bold", text: "B", format: "B", on: "bold", off: "removeBold" },
    { label: "Italic", text: "I", format: "I", on: "italic", off: "removeItalic" },
    { label: "Underline", text: "U", format: "U", on: "underline", off: "removeUnderline" },
    { text: "Bulleted list", format: "UL", on: "makeUnorderedList", off: "removeList" },
    { text: "Numbered list", format: "OL", on: "makeOrderedList", off: "removeList" },
    { text: "Quote", format: "BLOCKQUOTE", on: "increaseQuoteLevel", off: "decreaseQuoteLevel" },
    { text: "Link", format: "A", link: true },
    { text: "Clear formatting", clear: true }
  ];

  Compose.prototype.setUpEditor = function (startRich) {
    if (!this.holder || !this.textarea || !window.Squire || !window.DOMPurify) return;
    var self = this;
    var toolbar = document.createElement("div");
    toolbar.className = "compose__toolbar";
    toolbar.setAttribute("role", "toolbar");
    toolbar.setAttribute("aria-label", "Formatting");
    this.formatButtons = [];
    BUTTONS.forEach(function (spec) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "btn btn--ghost btn--sm compose__tool";
      button.textContent = spec.text;
      if (spec.label) {
        button.setAttribute("aria-label", spec.label);
        button.title = spec.label;
        button.setAttribute("data-tool", spec.format);
      }
      if (spec.format) button.setAttribute("aria-pressed", "false");
      button.addEventListener("mousedown", function (event) { event.preventDefault(); });
      button.addEventListener("click", function () { self.command(spec); });
      toolbar.appendChild(button);
      if (spec.format) self.formatButtons.push({ button: button, format: spec.format });
    });
    var toPlain = document.createElement("button");
    toPlain.type = "button";
    toPlain.className = "btn btn--link btn--sm compose__mode";
    toPlain.textContent = "Switch to plain text";
    toPlain.addEventListener("click", function () { self.setRich(false, true); });
    toolbar.appendChild(toPlain);

    var root = document.createElement("div");
    root.className = "compose__editable";
    root.setAttribute("role", "textbox");
    root.setAttribute("aria-multiline", "true");
    root.setAttribute("aria-labelledby", "compose-body-label");
    this.holder.appendChild(toolbar);
    this.holder.appendChild(root);

    this.toRich = document.createElement("button");
    this.toRich.type = "button";
    this.toRich.className = "btn btn--link btn--sm compose__mode";
    this.toRich.textContent = "Switch to rich text";
    this.toRich.addEventListener("click", function () { self.setRich(true, true); });
    this.textarea.parentNode.insertBefore(this.toRich, this.textarea);

    this.editor = new window.Squire(root, { blockTag: "DIV" });
    this.editor.addEventListener("pathChange", function () { self.updateButtons(); });
    this.editor.addEventListener("cursor", function () { self.updateButtons(); });
    this.editor.addEventListener("select", function () { self.updateButtons(); });
    var label = document.getElementById("compose-body-label");
    if (label) label.addEventListener("click", function () { if (self.rich) self.editor.focus(); });
    this.setRich(startRich, false);
  };

  Compose.prototype.setRich = function (rich, convert) {
    if (!this.editor) return;
    if (rich) {
      if (convert) this.editor.setHTML(textToHtml(this.textarea.value));
      else this.editor.setHTML(this.html.value || textToHtml(this.textarea.value));
    } else if (convert) {
      this.textarea.value = this.plainText();
    }
    this.rich = rich;
    this.holder.hidden = !rich;
    this.textarea.hidden = rich;
    this.toRich.hidden = rich;
    this.format.value = rich ? "rich" : "plain";
    if (convert) (rich ? this.editor : this.textarea).focus();
  };

  // The editor's text as mail text: one line per block, "> " before quoted lines, "- " or "1. " before list items.
  var BLOCKS = { DIV: 1, P: 1, BLOCKQUOTE: 1, LI: 1, UL: 1, OL: 1, H1: 1, H2: 1, H3: 1, H4: 1, H5: 1, H6: 1, PRE: 1,
    TABLE: 1, TR: 1 };

  function editorText(root) {
    var lines = [{ depth: 0, text: "" }];
    function last() { return lines[lines.length - 1]; }
    function newLine(depth) {
      if (last().text === "") last().depth = depth;
      else lines.push({ depth: depth, text: "" });
    }
    function walk(node, depth) {
      Array.prototype.forEach.call(node.childNodes, function (child, position) {
        if (child.nodeType === 3) {
          if (last().depth !== depth && last().text !== "") lines.push({ depth: depth, text: "" });
          last().depth = depth;
          last().text += child.data.replace(/[\u200B\n]/g, "").replace(/\u00A0/g, " ");
        } else if (child.nodeName === "BR") {
          if (child.nextSibling !== null || last().text === "") lines.push({ depth: depth, text: "" });
        } else if (BLOCKS[child.nodeName]) {
          var inner = child.nodeName === "BLOCKQUOTE" ? depth + 1 : depth;
          newLine(inner);
          if (child.nodeName === "LI") {
            last().text += child.parentNode.nodeName === "OL" ? (position + 1) + ". " : "- ";
          }
          walk(child, inner);
          newLine(depth);
        } else {
          walk(child, depth);
        }
      });
    }
    walk(root, 0);
    while (lines.length && last().text === "") lines.pop();
    return lines.map(function (line) {
      var mark = new Array(line.depth + 1).join(">");
      return mark ? mark + (line.text ? " " + line.text : "") : line.text;
    }).join("\n");
  }

  Compose.prototype.plainText = function () {
    return editorText(this.editor.getRoot());
  };

  Compose.prototype.command = function (spec) {
    var editor = this.editor;
    if (spec.clear) {
      editor.removeAllFormatting();
    } else if (spec.link) {
      if (editor.hasFormat("A")) {
        editor.removeLink();
      } else {
        var url = window.prompt("Link address", "https://");
        if (url) {
          url = url.trim();
          if (!/^(https?:|mailto:)/i.test(url)) url = (url.indexOf("@") > 0 && url.indexOf("/") < 0 ? "mailto:" : "https://") + url;
          editor.makeLink(url);
        }
      }
    } else {
      editor[editor.hasFormat(spec.format) ? spec.off : spec.on]();
    }
    editor.focus();
    this.updateButtons();
  };

  Compose.prototype.updateButtons = function () {
    var editor = this.editor;
    this.formatButtons.forEach(function (item) {
      item.button.setAttribute("aria-pressed", editor.hasFormat(item.format) ? "true" : "false");
    });
  };

  // Copy the editor into the form's fields (body_html, and its text in the textarea for the plain alternative).
  Compose.prototype.sync = function () {
    if (!this.editor) return;
    this.format.value = this.rich ? "rich" : "plain";
    if (this.rich) {
      this.html.value = this.editor.getHTML();
      this.textarea.value = this.plainText();
    }
  };

  // Autosave -----------------------------------------------------------------------------------------------------

  var NOT_CONTENT = { csrfmiddlewaretoken: 1, files: 1, draft: 1, keep: 1, forward_keep: 1, action: 1, body: 1 };

  Compose.prototype.snapshot = function () {
    this.sync();
    var parts = [];
    new FormData(this.form).forEach(function (value, name) {
      if (!NOT_CONTENT[name] && typeof value === "string") parts.push(name + "=" + value);
    });
    if (!this.rich) parts.push("body=" + this.textarea.value);
    return parts.join("\u0000");
  };

  Compose.prototype.formData = function () {
    this.sync();
    var data = new FormData(this.form);
    data.delete("files");
    data.delete("action");
    return data;
  };

  Compose.prototype.changed = function () {
    return this.attachmentsChanged || this.snapshot() !== this.lastSaved;
  };

  Compose.prototype.showProblem = function (text) {
    if (this.problem) this.problem.textContent = text || "";
  };

  Compose.prototype.replaceState = function (html) {
    var current = this.form.querySelector("#draft-state");
    if (!current) return;
    var holder = document.createElement("div");
    holder.innerHTML = html.trim();
    var fresh = holder.querySelector("#draft-state");
    if (fresh) {
      current.replaceWith(fresh);
      localTimes(fresh);
    }
  };

  Compose.prototype.finished = function () {
    this.busy = false;
    if (this.uploadWaiting && this.files && this.files.files.length && !this.submitting) {
      this.uploadWaiting = false;
      this.upload();
      return;
    }
    if (this.pendingSubmit !== null) {
      var submitter = this.pendingSubmit;
      this.pendingSubmit = null;
      this.submitting = true;
      this.sync();
      this.form.requestSubmit(submitter || undefined);
    }
  };

  Compose.prototype.save = function (keepalive) {
    if (this.busy || this.submitting || !this.changed()) return;
    var self = this;
    var snapshot = this.snapshot();
    this.attachmentsChanged = false;
    this.busy = true;
    fetch(this.autosaveUrl, {
      method: "POST", body: this.formData(), credentials: "same-origin", keepalive: !!keepalive,
      headers: { "X-CSRFToken": this.csrf(), "X-Requested-With": "fetch" }
    }).then(function (response) {
      return response.text().then(function (text) {
        if (response.ok && (response.redirected || text.indexOf('id="draft-state"') < 0)) {
          self.retryAt = Date.now() + RETRY_MS;
          self.showProblem(SIGNED_OUT);
        } else if (response.ok) {
          self.replaceState(text);
          self.lastSaved = snapshot;
          self.showProblem("");
        } else {
          self.attachmentsChanged = true;
          self.retryAt = Date.now() + RETRY_MS;
          self.showProblem(text);
        }
      });
    }).catch(function () {
      self.retryAt = Date.now() + RETRY_MS;
    }).then(function () { self.finished(); });
  };

  Compose.prototype.setUpAutosave = function () {
    var self = this;
    setInterval(function () {
      if (Date.now() >= self.retryAt) self.save(false);
    }, AUTOSAVE_MS);
    document.addEventListener("visibilitychange", function () {
      if (document.visibilityState === "hidden") self.save(true);
    });
    window.addEventListener("pagehide", function () { self.save(true); });
    this.form.addEventListener("change", function (event) {
      if (event.target.name === "keep" || event.target.name === "forward_keep") self.attachmentsChanged = true;
    });
    this.form.addEventListener("submit", function (event) {
      if (self.busy) { // wait for the save or upload under way, then submit with the draft it made
        event.preventDefault();
        self.pendingSubmit = event.submitter || null;
        return;
      }
      self.sync();
      self.submitting = true;
    });
  };

  // Uploads: each chosen file goes into the draft at once, with progress. -----------------------------------------

  Compose.prototype.setUpUploads = function () {
    if (!this.files || !this.uploads || !window.XMLHttpRequest) return;
    var self = this;
    this.files.addEventListener("change", function () {
      if (!self.files.files.length) return;
      if (self.busy) self.uploadWaiting = true; // after the save under way
      else self.upload();
    });
  };

  Compose.prototype.upload = function () {
    var self = this;
    var names = Array.prototype.map.call(this.files.files, function (file) { return file.name; }).join(", ");
    var item = document.createElement("li");
    var label = document.createElement("span");
    var progress = document.createElement("progress");
    progress.max = 100;
    progress.value = 0;
    progress.setAttribute("aria-label", "Uploading " + names);
    label.textContent = "Uploading " + names + "…";
    item.appendChild(label);
    item.appendChild(progress);
    this.uploads.appendChild(item);

    var data = this.formData();
    Array.prototype.forEach.call(this.files.files, function (file) { data.append("files", file); });
    var snapshot = this.snapshot();
    this.busy = true;
    var request = new XMLHttpRequest();
    request.open("POST", this.autosaveUrl);
    request.setRequestHeader("X-CSRFToken", this.csrf());
    request.upload.addEventListener("progress", function (event) {
      if (event.lengthComputable) progress.value = Math.round((event.loaded / event.total) * 100);
    });
    request.addEventListener("load", function () {
      var signedOut = request.responseText.indexOf('id="draft-state"') < 0;
      if (request.status >= 200 && request.status < 300 && signedOut) {
        label.textContent = names + ": not attached. " + SIGNED_OUT;
        item.classList.add("compose__upload--failed");
      } else if (request.status >= 200 && request.status < 300) {
        self.replaceState(request.responseText);
        self.lastSaved = snapshot;
        self.files.value = "";
        progress.value = 100;
        label.textContent = names + " attached.";
        self.showProblem("");
      } else {
        label.textContent = names + ": not attached. " + request.responseText;
        item.classList.add("compose__upload--failed");
        self.files.value = "";
      }
      progress.remove();
      self.finished();
    });
    request.addEventListener("error", function () {
      label.textContent = names + ": not attached (the connection failed). Try again.";
      item.classList.add("compose__upload--failed");
      progress.remove();
      self.finished();
    });
    request.send(data);
  };

  // Address suggestions for the entry being typed. ----------------------------------------------------------------

  Compose.prototype.setUpSuggestions = function () {
    var list = document.getElementById("compose-recipients");
    if (!list || !this.suggestUrl) return;
    var self = this;
    var timer = null;
    var asked = 0;
    this.form.querySelectorAll("[data-suggest]").forEach(function (input) {
      input.addEventListener("input", function () {
        clearTimeout(timer);
        timer = setTimeout(function () {
          var ask = ++asked;
          fetch(self.suggestUrl + "?q=" + encodeURIComponent(input.value), { credentials: "same-origin" })
            .then(function (response) { return response.ok ? response.text() : ""; })
            .then(function (html) { if (ask === asked && html !== "") list.innerHTML = html; })
            .catch(function () {});
        }, 200);
      });
    });
  };

  Compose.prototype.setFocus = function () {
    var invalid = this.form.querySelector('[aria-invalid="true"]');
    if (invalid) { invalid.focus(); return; }
    if (document.querySelector(".alert--error[role=alert]")) return;
    var to = this.form.querySelector("input[name=to]");
    if (to && !to.value.trim()) { to.focus(); return; }
    if (this.rich && this.editor) { this.editor.focus(); this.editor.moveCursorToStart(); }
    else if (this.textarea) { this.textarea.focus(); this.textarea.setSelectionRange(0, 0); }
  };

  document.addEventListener("DOMContentLoaded", function () {
    localTimes(document);
    countdown();
    var form = document.querySelector("form[data-compose]");
    if (form) form.compose = new Compose(form);
  });
})();
