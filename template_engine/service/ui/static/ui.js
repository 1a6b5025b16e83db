// The service's pages work without this script; it only adds conveniences (no inline script anywhere).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  // Ctrl+Enter (Cmd+Enter) in the document editor previews the change.
  var text = document.getElementById("document-text");
  var preview = document.getElementById("preview");
  if (text && preview) {
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
});
