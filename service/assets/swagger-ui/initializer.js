// Starts Swagger UI on the server's own OpenAPI document, whose address the page gives in
// `data-url`. A separate file rather than an inline script, so the page's
// Content-Security-Policy can forbid inline scripts.
window.addEventListener("load", function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-url"),
    domNode: root,
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
