"""The partner portal: pages for account users (owners, teammates, hosting partners), signed in
with their portal login. Views parse, call one mailcore service or selector, and render; forms and
presenters (DNS advice, dashboard figures) live beside them."""
