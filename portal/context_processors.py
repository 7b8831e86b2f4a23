from portal.partner.navigation import navigation_for


def portal(request):
    user = getattr(request, "user", None)
    account = getattr(user, "account", None) if user is not None and user.is_authenticated else None
    return {
        "brand_name": "Mailwell",
        "account": account,
        "nav": navigation_for(request, account) if account is not None else [],
    }
