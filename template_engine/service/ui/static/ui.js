// The service's pages work without this script; it only adds conveniences (no inline script anywhere).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var text = document.getElementById("document-text");
  var preview = document.getElementById("preview");
  var editor = null;
  if (text && text.dataset.editor === "yaml" && window.CodeMirror) {
    editor = makeEditor(text, preview);
  } else if (text && preview) {
    // Ctrl+Enter (Cmd+Enter) in the plain textarea previews the change.
    text.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        preview.click();
      }
    });
  }
  // A form sent once is not sent twice by a double click (buttons are disabled after the form data is taken).
  Array.prototype.forEach.call(document.querySelectorAll("form"), function (form) {
    form.addEventListener("submit", function () {
      window.setTimeout(function () {
        Array.prototype.forEach.call(form.querySelectorAll("button"), function (button) {
          button.disabled = true;
        });
      }, 0);
    });
  });
  if (editor) {
    markProblems(editor);
  }
});

// CodeMirror 5 (vendored under /ui/static/, MIT) over the form's textarea: YAML highlighting, line numbers, a
// gutter for the problems of a refused preview or save.  It writes its text back into the textarea when the
// form is submitted, so the form posts what it would post without script.
function makeEditor(text, preview) {
  var leaving = false; // Esc, then Tab, moves the focus on instead of indenting (no keyboard trap)
  var run = function () {
    if (preview) {
      editor.save();
      preview.click();
    }
  };
  var editor = window.CodeMirror.fromTextArea(text, {
    mode: "yaml",
    lineNumbers: true,
    gutters: ["CodeMirror-linenumbers", "te-problems"],
    indentUnit: 2,
    tabSize: 2,
    indentWithTabs: false,
    lineWrapping: false,
    viewportMargin: Infinity,
    screenReaderLabel: (document.getElementById("document-label") || {}).textContent || "document",
    extraKeys: {
      "Ctrl-Enter": run,
      "Cmd-Enter": run,
      Esc: function () {
        leaving = true;
      },
      Tab: function (cm) {
        if (leaving) {
          leaving = false;
          leave(cm, 1);
          return;
        }
        cm.replaceSelection("  ", "end"); // YAML indents with spaces, never a tab
      },
      "Shift-Tab": function (cm) {
        if (leaving) {
          leaving = false;
          leave(cm, -1);
          return;
        }
        cm.execCommand("indentLess");
      },
    },
  });
  editor.on("keydown", function (cm, event) {
    if (["Escape", "Tab", "Shift", "Control", "Alt", "Meta"].indexOf(event.key) < 0) {
      leaving = false;
    }
  });
  editor.getWrapperElement().id = "document-editor";
  return editor;
}

// Move the focus to the control after (1) or before (-1) the editor, as Tab and Shift+Tab do elsewhere.
function leave(cm, step) {
  var wrapper = cm.getWrapperElement();
  var controls = Array.prototype.filter.call(
    document.querySelectorAll("a[href], button, input:not([type=hidden]), select, textarea, [tabindex]"),
    function (el) {
      return !wrapper.contains(el) && !el.disabled && el.getClientRects().length > 0 && el.tabIndex >= 0;
    }
  );
  var after = controls.filter(function (el) {
    return wrapper.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING;
  });
  var target = step > 0 ? after[0] : controls[controls.length - after.length - 1];
  if (target) {
    target.focus();
  }
}

// The problems listed with a line (li[data-line]) get a marker in the editor's gutter at that line, with the
// problem as its hover text, and their "line N" links put the cursor there.
function markProblems(editor) {
  var items = document.querySelectorAll("#problem-list li[data-line]");
  var last = editor.lineCount();
  Array.prototype.forEach.call(items, function (item) {
    var line = parseInt(item.dataset.line, 10) - 1;
    if (!(line >= 0 && line < last)) {
      return;
    }
    var info = editor.lineInfo(line);
    var marker = info.gutterMarkers && info.gutterMarkers["te-problems"];
    if (!marker) {
      marker = document.createElement("span");
      marker.className = "te-problem-marker";
      marker.textContent = "!";
      marker.dataset.line = String(line + 1);
      marker.title = "";
      editor.setGutterMarker(line, "te-problems", marker);
      editor.addLineClass(line, "background", "te-problem-line");
    }
    marker.title = (marker.title ? marker.title + "\n" : "") + item.textContent;
    marker.setAttribute("aria-label", marker.title);
    var link = item.querySelector("a.line-ref");
    if (link) {
      link.addEventListener("click", function (event) {
        event.preventDefault();
        editor.setCursor({ line: line, ch: 0 });
        editor.scrollIntoView({ line: line, ch: 0 }, 80);
        editor.focus();
      });
    }
  });
}
