"""The query parameters of a paged list, bounded by mailcore's paging rule (422 outside it)."""
from rest_framework import serializers

from mailcore.paging import MAX_PAGE


def page_query(*, size_name: str = "per_page", default_size: int = 50, max_size: int = 100,
               name: str = "PageQuery") -> type[serializers.Serializer]:
    """A query serializer with `page` and a page-size parameter; endpoints mix it into their own query."""
    fields = {
        "page": serializers.IntegerField(default=1, min_value=1, max_value=MAX_PAGE,
                                         help_text=f"1 to {MAX_PAGE}; a page past the end is empty."),
        size_name: serializers.IntegerField(default=default_size, min_value=1, max_value=max_size,
                                            help_text=f"1 to {max_size}; default {default_size}."),
    }
    return type(name, (serializers.Serializer,), fields)
