"""The owner's settings: password, identity, forwarding, filters, vacation (portal.webmail.owner_settings),
spam and senders (portal.webmail.protection_settings),
and setting up mail apps (portal.webmail.mobileconfig)."""
from django.urls import path

from portal.webmail import mobileconfig, owner_settings, protection_settings

urlpatterns = [
    path("", owner_settings.settings_index, name="settings"),
    path("password/", owner_settings.settings_password, name="settings_password"),
    path("identity/", owner_settings.settings_identity, name="settings_identity"),
    path("forwarding/", owner_settings.settings_forwarding, name="settings_forwarding"),
    path("forwarding/<int:rule_id>/enabled/", owner_settings.settings_forwarding_enabled,
         name="settings_forwarding_enabled"),
    path("forwarding/<int:rule_id>/delete/", owner_settings.settings_forwarding_delete,
         name="settings_forwarding_delete"),
    path("filters/", owner_settings.settings_filters, name="settings_filters"),
    path("filters/<int:filter_id>/", owner_settings.settings_filter_edit, name="settings_filter_edit"),
    path("filters/<int:filter_id>/delete/", owner_settings.settings_filter_delete, name="settings_filter_delete"),
    path("filters/<int:filter_id>/move/", owner_settings.settings_filter_move, name="settings_filter_move"),
    path("vacation/", owner_settings.settings_vacation, name="settings_vacation"),
    path("spam/", protection_settings.settings_protection, name="settings_protection"),
    path("spam/senders/", protection_settings.settings_sender_add, name="settings_sender_add"),
    path("spam/senders/<int:rule_id>/delete/", protection_settings.settings_sender_delete,
         name="settings_sender_delete"),
    path("mail-apps/", mobileconfig.mail_apps, name="settings_mail_apps"),
    path("mail-apps/profile.mobileconfig", mobileconfig.mobileconfig, name="settings_mobileconfig"),
]
